"""The example view models through the API."""
import json

import pytest

from e2e_helpers import SSEClient, apply_ops, normalised


def media(mid, title, kind="image"):
    return {"id": mid, "type": kind, "title": title, "url": f"/media/{mid}.jpg"}


def test_home_patches_become_single_batches_that_converge(server):
    client = SSEClient(server, "/feeds/home/events")
    document = json.loads(client.next_event()["data"])
    patches = [
        {"banner": None},
        {"suggested": [media("m3", "Desert dunes"), media("x1", "New", "video"), media("m1", "Northern lights")]},
        {"recommended": [media("m3", "Desert dunes"), media("m5", "Mountain trail", "video")], "recommendedHeader": {"isFeatured": True}},
        {"banner": {"id": "b2", "title": "Back", "subtitle": "again"}, "suggested": []},
    ]
    for patch in patches:
        result = server.request("PATCH", "/feeds/home", patch)
        event = client.next_event()
        batch = json.loads(event["data"])
        assert batch["version"] == result["version"] and len(batch["ops"]) == result["ops"]
        document = apply_ops(document, batch["ops"])
        assert normalised(document) == normalised(server.request("GET", "/feeds/home"))
    sections = [s["id"] for s in document["sections"]]
    assert sections == ["banner", "recommended"]
    client.close()


@pytest.mark.parametrize("body,status,field", [
    (b'{"suggested": [{"id": "a", "type": "gif", "title": "t", "url": "u"}]}', 422, "suggested[0].type"),
    (b'{"colour": "red"}', 422, "colour"),
    (b'{"recommendedHeader": {"isFeatured": 1}}', 422, "recommendedHeader.isFeatured"),
    (b'{"banner": {"title": "no id"}}', 422, "banner.id"),
    (b'{"banner": ', 400, "invalid JSON"),
])
def test_bad_patches_name_the_field_and_change_nothing(server, body, status, field):
    before = server.request("GET", "/feeds/home")
    got, _, error = server.call("PATCH", "/feeds/home", raw=body)
    assert got == status and field in error["detail"]
    assert server.request("GET", "/feeds/home") == before


def test_deal_appends_one_card(server):
    for _ in range(12):
        before = server.request("GET", "/feeds/blackjack")
        result = server.request("POST", "/feeds/blackjack/actions/deal")
        after = server.request("GET", "/feeds/blackjack")
        cards_before, cards_after = before["sections"][0]["items"], after["sections"][0]["items"]
        ids = [c["id"] for c in cards_after]
        assert len(ids) == len(set(ids))
        if before["sections"][0]["model"]["score"] >= 21:
            assert len(cards_after) == 1  # a new hand from a new deck
        else:
            assert [c["id"] for c in cards_after[:-1]] == [c["id"] for c in cards_before]
            assert result["ops"] == 2  # the insert and the hand's score/remaining
        assert after["sections"][0]["model"]["remaining"] == 52 - len(cards_after) or len(cards_after) > 1


def test_select_updates_only_the_hours_that_differ(server):
    client = SSEClient(server, "/feeds/forecast/events")
    before = json.loads(client.next_event()["data"])
    server.request("POST", "/feeds/forecast/actions/select", {"day": "d-thu"})
    batch = json.loads(client.next_event()["data"])
    after = server.request("GET", "/feeds/forecast")
    hours = lambda doc: {i["id"]: i["model"] for s in doc["sections"] if s["id"] == "hourly" for i in s["items"]}
    differing = {h for h, m in hours(after).items() if hours(before)[h] != m}
    updated = {op["item"] for op in batch["ops"] if op["op"] == "update" and op["item"].startswith("h-")}
    assert differing and updated == differing and len(differing) < len(hours(after))
    assert {op["op"] for op in batch["ops"]} <= {"update", "updateSection"}
    assert server.call("POST", "/feeds/forecast/actions/select", {"day": "d-nope"})[0] == 422
    client.close()


def test_demo_changes_home_and_week_by_itself(start):
    server = start("--demo")
    home = SSEClient(server, "/feeds/home/events")
    week = SSEClient(server, "/feeds/week/events")
    assert home.next_event()["event"] == "snapshot" and week.next_event()["event"] == "snapshot"
    for _ in range(3):
        event = home.next_event(timeout=6)
        assert event is not None and event["event"] == "batch", "the demo ticker publishes every ~2 s"
    batch = json.loads(week.next_event(timeout=8)["data"])
    assert batch["ops"] and {op["op"] for op in batch["ops"]} == {"update"}
    home.close()
    week.close()
