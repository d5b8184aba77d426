"""The clients follow a family member unchanged (issue 38): `diffstream watch` (built on the Swift client,
DiffStreamClient) follows `home.alice`, which the example family's loader makes on first use, as it
follows any feed: first the snapshot naming Alice, then a `PATCH /feeds/home.alice` as the next version of
the same history (a batch, not a resync). Tests/DiffStreamClientTests (`aFamilyMemberIsFollowedUnchanged`)
does the same with the client's typed API.

The store does not matter here (scripts/test.sh runs this file in the first pass only).
"""
from e2e_helpers import BINARY, clean_environment
import subprocess

from test_swift_client import Watch, get_body, history_and_version, without_raw


def banner_title(document):
    return next(item["model"]["title"] for section in document["sections"] for item in section["items"] if item["kind"] == "banner")


def section_title(document, section_id):
    return next(section["model"]["title"] for section in document["sections"] if section["id"] == section_id)


def test_watch_json_follows_a_member_from_its_first_snapshot_through_a_patch(start):
    server = start("--examples", "home")
    watch = Watch("--json", f"http://127.0.0.1:{server.port}", "home.alice")
    try:
        first = watch.next()
        assert first["feed"] == "home.alice" and banner_title(first) == "Welcome back, Alice"
        assert without_raw(first) == get_body(server, "home.alice")
        history, version = history_and_version(first)

        reply = server.http("PATCH", "/feeds/home.alice", json_body={"recommendedHeader": {"title": "Just for Alice"}})
        assert reply.status == 200, reply
        changed = watch.next()
        assert history_and_version(changed) == (history, version + 1)  # the same history, the next version: a batch
        assert section_title(changed, "recommended") == "Just for Alice" and banner_title(changed) == "Welcome back, Alice"
        assert without_raw(changed) == get_body(server, "home.alice")
        assert server.metrics()["diffstream_resyncs_total"] == 0  # no snapshot was sent again
    finally:
        watch.stop()


def test_watch_follows_two_members_on_one_stream_each_with_its_own_changes(start):
    server = start("--examples", "home")
    watch = Watch("--json", f"http://127.0.0.1:{server.port}", "home.alice", "home.bob")
    try:
        first = {}
        while len(first) < 2:
            line = watch.next()
            first[line["feed"]] = line
        assert banner_title(first["home.alice"]) == "Welcome back, Alice" and banner_title(first["home.bob"]) == "Welcome back, Bob"

        server.ok("PATCH", "/feeds/home.bob", {"recommendedHeader": {"title": "Bob's"}})
        changed = watch.next()
        assert changed["feed"] == "home.bob" and section_title(changed, "recommended") == "Bob's"
        assert history_and_version(changed) == (history_and_version(first["home.bob"])[0], history_and_version(first["home.bob"])[1] + 1)
        server.ok("PATCH", "/feeds/home.alice", {"recommendedHeader": {"title": "Alice's"}})
        changed = watch.next()  # the next line is Alice's: Bob's change was not sent twice, nor to her
        assert changed["feed"] == "home.alice" and section_title(changed, "recommended") == "Alice's"
    finally:
        watch.stop()


def test_watch_once_shows_a_member_as_plain_lines(start):
    server = start("--examples", "home")
    result = subprocess.run([str(BINARY), "watch", "--once", f"http://127.0.0.1:{server.port}", "home.carol"],
                            capture_output=True, text=True, timeout=30, env=clean_environment())
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "home.carol v1" in lines, lines
    assert any(line.startswith("    banner banner-welcome-carol ") and "Welcome back, Carol" in line for line in lines), lines
