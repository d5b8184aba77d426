"""This build reads a `--data` directory written by an earlier commit's binary with every history going on
(issue 51, item 5): checks/fixtures/store-51042c0 (see checks/fixtures/README.md). Its servers choose their
store (a copy of the fixture), so this file runs once, in the suite's default pass."""
import json
import shutil
from pathlib import Path

import pytest

from e2e_helpers import SSEClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED = json.loads((FIXTURES / "store-51042c0.json").read_text())["feeds"]


@pytest.fixture
def server(start, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "store-51042c0", data)
    return start("--data", data)


def section(document, section_id):
    return next(s for s in document["sections"] if s["id"] == section_id)


def test_every_feed_of_the_fixture_goes_on_with_its_history(server):
    for feed, position in EXPECTED.items():
        document = server.get(f"/feeds/{feed}")
        assert (document["history"], document["version"]) == (position["history"], position["version"]), feed
    news = server.get("/feeds/news")
    assert [item["id"] for item in section(news, "top")["items"]] == ["b", "a"]
    assert section(server.get("/feeds/home.alice"), "recommended")["model"]["title"] == "Just for Alice"
    assert section(server.get("/feeds/home"), "recommended")["model"]["title"] == "Shared header"
    todo = json.dumps(server.get("/feeds/todo"))
    assert "Buy milk" in todo


@pytest.mark.parametrize("feed,write", [
    ("news", ("PUT", "/feeds/news", {"sections": [{"id": "top", "model": {"title": "Top"}, "items": []}]})),
    ("home.alice", ("PATCH", "/feeds/home.alice", {"recommendedHeader": {"isFeatured": True}})),
    ("todo", ("POST", "/feeds/todo/actions/add", {"title": "Bake bread"})),
])
def test_a_resume_from_a_fixture_id_gets_the_next_write_as_a_batch(server, feed, write):
    position = EXPECTED[feed]
    held = f"ds1.{position['history']}.{position['version']}"
    with SSEClient(server.port, f"/feeds/{feed}/events", headers={"Last-Event-ID": held}) as client:
        server.ok(*write)
        kind, batch = client.expect_event("batch")
        assert (batch["history"], batch["from"], batch["version"]) == (position["history"], position["version"], position["version"] + 1)
