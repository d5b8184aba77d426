"""Who is here (issue 55): a feed with presence (`--presence`, `--presence-names`) has a read-only feed,
`_presence.F`, of who has an event stream of it open: joins, leaves after the grace period, several
streams of one user as one item, the reconnect grace, coalescing, the threshold, and the rights; `diffstream
watch` on a presence feed (the Swift client's presence types), and the cap, --max-presence-feeds."""
import json
import queue
import re
import subprocess
import threading
import time
import urllib.parse

import pytest

from e2e_helpers import BINARY, JWT_SECRET, SSEClient, apply_ops, clean_environment, jwt_token, rights, snapshot, wait_until
from redis_helpers import cluster, redis  # noqa: F401 (fixtures)


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "jwt-secret"
    path.write_text(JWT_SECRET + "\n")
    return path


def token(sub, name=None, subscribe=("*",)):
    payload = rights(subscribe=subscribe)
    payload["sub"] = sub
    if name:
        payload["name"] = name
    return jwt_token(payload)


class Watcher:
    """Follows a presence feed, applying its batches to its snapshot, and times each batch."""

    def __init__(self, port, name="_presence.board", headers=None):
        self.client = SSEClient(port, f"/feeds/{name}/events", headers=headers)
        assert self.client.status == 200, self.client.head
        _, self.document = self.client.expect_event("snapshot")
        self.batches = []  # (arrival time, bytes of data)

    def section(self):
        return self.document["sections"][0]

    def count(self):
        return self.section()["model"]["count"]

    def items(self):
        return [item["model"] for item in self.section()["items"]]

    def until(self, predicate, timeout=10.0):
        """Applies batches until `predicate(self)` holds."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            event = self.client.next_event(timeout=max(0.0, deadline - time.monotonic()))
            assert event is not None, f"presence never matched; last {self.document}"
            data = json.loads(event["data"])
            if event.get("event") == "batch":
                self.batches.append((time.monotonic(), len(event["data"].encode())))
                self.document = apply_ops(self.document, data["ops"])
            elif event.get("event") == "snapshot":
                self.document = data
        return self

    def quiet(self, seconds):
        """The events within `seconds` (none expected)."""
        return self.client.next_event(timeout=seconds)

    def close(self):
        self.client.close()


def stream(server, path="/feeds/board/events", headers=None):
    client = SSEClient(server.port, path, headers=headers)
    assert client.status == 200, client.head
    client.expect_event("snapshot")
    return client


@pytest.fixture
def board(start, secret_file):
    server = start("--presence-names", "board*", "--presence", "lobby", "--presence-grace", "0.5", "--presence-interval", "0.2",
                   "--jwt-secret-file", secret_file, "--token", "admin-token")
    server.put("board", snapshot(("s", [])), headers={"Authorization": "Bearer admin-token"})
    return server


def test_joins_leaves_and_several_streams_of_one_user(board):
    watcher = Watcher(board.port)
    assert watcher.count() == 0 and watcher.items() == []
    alice = {"Authorization": "Bearer " + token("alice@example.com", "Alice")}
    first = stream(board, headers=alice)
    assert first.header("DiffStream-Presence") == "_presence.board"
    watcher.until(lambda w: w.count() == 1)
    assert watcher.items()[0]["name"] == "Alice" and watcher.items()[0]["connections"] == 1
    second = stream(board, "/events?feed=board&feed=lobby", headers=alice)
    watcher.until(lambda w: w.items()[0]["connections"] == 2)
    assert watcher.count() == 1, "two streams of one user are one item"
    bob = stream(board, headers={"Authorization": "Bearer " + token("bob@example.com", "Bob")})
    watcher.until(lambda w: w.count() == 2)
    assert [item["name"] for item in watcher.items()] == ["Alice", "Bob"], "in join order"
    first.close()
    second.close()
    watcher.until(lambda w: w.count() == 1, timeout=5)
    assert watcher.items()[0]["name"] == "Bob"
    bob.close()
    watcher.until(lambda w: w.count() == 0, timeout=5)
    listing = {entry["feed"]: entry for entry in board.get("/feeds")}
    assert listing["board"]["presence"] == "_presence.board" and "_presence.board" not in listing
    watcher.close()


def test_a_reconnect_within_the_grace_is_neither_leave_nor_join(board):
    watcher = Watcher(board.port)
    carried = "page-0123456789abcdef"
    first = stream(board, f"/feeds/board/events?presence-id={carried}")
    watcher.until(lambda w: w.count() == 1)
    seen = len(watcher.batches)
    first.close()
    again = stream(board, f"/events?feed=board&presence-id={carried}")
    assert watcher.quiet(1.0) is None, "no leave and join on the wire"
    assert len(watcher.batches) == seen and watcher.count() == 1
    again.close()
    watcher.until(lambda w: w.count() == 0, timeout=5)
    watcher.close()


def test_changes_are_coalesced_and_the_threshold_lists_the_first_users(start, secret_file):
    server = start("--presence-names", "crowd", "--presence-interval", "1", "--presence-grace", "0", "--jwt-secret-file", secret_file,
                   "--token", "admin-token", "--max-connections-per-ip", "1000")
    server.put("crowd", snapshot(("s", [])), headers={"Authorization": "Bearer admin-token"})
    watcher = Watcher(server.port, "_presence.crowd")
    clients = []
    opened = time.monotonic()
    for n in range(130):
        clients.append(stream(server, "/feeds/crowd/events", headers={"Authorization": "Bearer " + token(f"user-{n:03d}", f"User {n}")}))
    # A change over 16 KiB comes in steps: the count first, the items by the end of the last one.
    watcher.until(lambda w: w.count() == 130 and len(w.items()) == 100, timeout=20)
    took = time.monotonic() - opened
    assert len(watcher.batches) <= int(took / 1.0) + 2, f"{len(watcher.batches)} batches in {took:.1f} s: at most one a second"
    assert all(size <= 16 * 1024 for _, size in watcher.batches), watcher.batches
    names = [item["name"] for item in watcher.items()]
    assert len(names) == 100 and watcher.section()["model"] == {"count": 130, "listed": 100}
    assert names == [f"User {n}" for n in range(100)], "the first 100 in join order"
    for client in clients[:10]:
        client.close()
    watcher.until(lambda w: w.count() == 120 and w.items()[0]["name"] == "User 10")
    assert [item["name"] for item in watcher.items()][:2] == ["User 10", "User 11"] and len(watcher.items()) == 100
    for client in clients[10:]:
        client.close()
    watcher.until(lambda w: w.count() == 0)
    watcher.close()


def test_rights_no_sub_leaks_and_a_reader_without_the_feed_is_refused(start, secret_file):
    server = start("--presence", "board", "--presence-names", "named", "--presence-grace", "0", "--presence-interval", "0.1",
                   "--jwt-secret-file", secret_file, "--private", "--token", "admin-token")
    for feed in ("board", "named"):
        server.put(feed, snapshot(("s", [])), headers={"Authorization": "Bearer admin-token"})
    reader = {"Authorization": "Bearer " + token("reader@example.com", subscribe=("board", "named"))}
    watcher = Watcher(server.port, headers=reader)
    alice = stream(server, headers={"Authorization": "Bearer " + token("alice@example.com", "Alice", subscribe=("board",))})
    watcher.until(lambda w: w.count() == 1)
    text = json.dumps(watcher.document)
    assert "alice" not in text and "Alice" not in text, "no identities on a feed without --presence-names"
    assert watcher.items()[0]["connections"] == 1
    outsider = {"Authorization": "Bearer " + token("eve@example.com", subscribe=("other",))}
    for path in ("/feeds/_presence.board", "/feeds/_presence.board/events", "/events?feed=_presence.board"):
        assert server.http("GET", path, headers=outsider).status == 403, path
        assert server.http("GET", path).status == 401, path
    assert server.http("PUT", "/feeds/_presence.board", json_body=snapshot(), headers={"Authorization": "Bearer admin-token"}).status == 405
    assert server.http("GET", "/feeds/_presence.news", headers={"Authorization": "Bearer admin-token"}).status == 404
    # Following presence makes no one present, and a token that may read it sees the named presence.
    named = Watcher(server.port, "_presence.named", headers=reader)
    assert named.quiet(0.5) is None and named.count() == 0
    bob = stream(server, "/feeds/named/events", headers={"Authorization": "Bearer " + token("bob@example.com", "Bob", subscribe=("named",))})
    named.until(lambda w: w.count() == 1)
    assert named.items()[0]["sub"] == "bob@example.com"
    for client in (alice, bob, watcher, named):
        client.close()


def test_bad_presence_parameters_are_refused(board):
    meta = urllib.parse.quote(json.dumps({"status": "x" * 200}))
    assert board.http("GET", f"/feeds/board/events?presence-meta={meta}").status == 400
    assert board.http("GET", "/feeds/board/events?presence-id=short").status == 400


def test_two_instances_under_redis_merge_presence_and_a_killed_one_leaves_no_ghosts(cluster, secret_file):
    flags = ("--examples", "none", "--presence-names", "board", "--presence-grace", "0", "--presence-interval", "0.2",
             "--jwt-secret-file", secret_file, "--token", "admin-token")
    a, b = cluster.launch(2, *flags)
    a.put("board", snapshot(("s", [])), headers={"Authorization": "Bearer admin-token"})
    watcher = Watcher(b.port)
    alice = {"Authorization": "Bearer " + token("alice@example.com", "Alice")}
    on_a = stream(a, headers=alice)
    watcher.until(lambda w: w.count() == 1)
    assert watcher.items()[0]["name"] == "Alice", "B shows a user whose stream is on A"
    on_b = stream(b, headers=alice)
    bob_on_a = stream(a, headers={"Authorization": "Bearer " + token("bob@example.com", "Bob")})
    watcher.until(lambda w: w.count() == 2 and {i["name"]: i["connections"] for i in w.items()} == {"Alice": 2, "Bob": 1})
    on_watch_a = Watcher(a.port)
    on_watch_a.until(lambda w: w.count() == 2, timeout=5)
    assert sorted(i["name"] for i in on_watch_a.items()) == ["Alice", "Bob"], "A shows the same merge"
    on_watch_a.close()
    killed = time.monotonic()
    a.kill()  # SIGKILL: no goodbye; its share counts until its liveness lapses (5 s)
    watcher.until(lambda w: w.count() == 1 and w.items()[0]["connections"] == 1, timeout=15)
    assert watcher.items()[0]["name"] == "Alice" and time.monotonic() - killed < 10, "Bob's ghost gone within the liveness"
    for client in (on_a, on_b, bob_on_a, watcher):
        client.close()


def test_diffstream_watch_follows_a_presence_feed_by_its_name(board):
    watcher = BINARY.parent / "diffstream-watch"
    if not watcher.exists():
        pytest.fail(f"no {watcher}: build it with 'swift build --product diffstream-watch'")
    alice = stream(board, headers={"Authorization": "Bearer " + token("alice@example.com", "Alice")})
    probe = Watcher(board.port)
    probe.until(lambda w: w.count() == 1)
    result = subprocess.run([str(BINARY), "watch", "--once", "--json", f"http://127.0.0.1:{board.port}", "_presence.board"],
                            capture_output=True, text=True, timeout=30, env=clean_environment(), stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout.splitlines()[0])
    assert "_presence.board" in result.stdout and "Alice" in result.stdout, line
    for client in (alice, probe):
        client.close()


class PresenceView:
    """`diffstream watch URL _presence.F` without --json into a pipe: one view per update, a blank line after
    each. The views come from the Swift client's own types for presence feeds (`snapshots(of:as:)` with
    `Snapshot<PresenceSummary, PresenceMember>`, Sources/DiffStreamClient/PresenceMember.swift)."""

    def __init__(self, port, name="_presence.board"):
        watcher = BINARY.parent / "diffstream-watch"
        if not watcher.exists():
            pytest.fail(f"no {watcher}: build it with 'swift build --product diffstream-watch'")
        self.process = subprocess.Popen([str(BINARY), "watch", f"http://127.0.0.1:{port}", name], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_environment())
        self.views = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        lines = []
        for line in self.process.stdout:
            if line.strip():
                lines.append(line.rstrip("\n"))
            elif lines:
                self.views.put(lines)
                lines = []
        self.views.put(None)

    def until(self, predicate, timeout=15):
        """The first view (its lines) that satisfies `predicate`."""
        deadline = time.monotonic() + timeout
        while True:
            view = self.views.get(timeout=max(0.1, deadline - time.monotonic()))
            assert view is not None, f"watch ended: {self.process.wait()} {self.process.stderr.read()}"
            if predicate(view):
                return view

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def test_diffstream_watch_shows_a_user_join_and_leave_with_the_clients_presence_types(board):
    view = PresenceView(board.port)
    try:
        first = view.until(lambda v: True)
        assert re.fullmatch(r"_presence\.board v\d+: 0 watching", first[0]) and len(first) == 1, first
        alice = stream(board, headers={"Authorization": "Bearer " + token("alice@example.com", "Alice")})
        joined = view.until(lambda v: v[0].endswith(": 1 watching"))
        assert len(joined) == 2 and re.fullmatch(r"    Alice <alice@example\.com> · 1 stream · since \d\d:\d\d:\d\d UTC · [0-9a-f]{8}", joined[1]), joined
        again = stream(board, "/events?feed=board", headers={"Authorization": "Bearer " + token("alice@example.com", "Alice")})
        view.until(lambda v: len(v) == 2 and "· 2 streams ·" in v[1])
        bob = stream(board, headers={"Authorization": "Bearer " + token("bob@example.com")})
        both = view.until(lambda v: v[0].endswith(": 2 watching"))
        assert both[1].startswith("    Alice <alice@example.com> · 2 streams") and both[2].startswith("    (no name) <bob@example.com> · 1 stream"), both
        for client in (alice, again):
            client.close()
        left = view.until(lambda v: v[0].endswith(": 1 watching"))
        assert len(left) == 2 and left[1].startswith("    (no name) <bob@example.com>"), left
        bob.close()
        view.until(lambda v: v[0].endswith(": 0 watching") and len(v) == 1)
    finally:
        view.stop()


def test_past_max_presence_feeds_a_feed_has_no_presence_feed_until_one_is_dropped(start):
    """--max-presence-feeds 1: the presence feed of board is held while someone watches it, so lobby's is
    refused (503 naming the limit, a stream of lobby makes no one present, a multi-feed stream says notfound);
    once board's is dropped, lobby gets one."""
    server = start("--presence", "board,lobby", "--max-presence-feeds", "1", "--presence-grace", "0", "--presence-interval", "0.1")
    for feed in ("board", "lobby"):
        server.put(feed, snapshot(("s", [])))
    board_watcher = Watcher(server.port)
    reply = server.http("GET", "/feeds/_presence.lobby")
    body = reply.json()
    assert reply.status == 503 and reply.headers["Retry-After"] == "5", (reply.status, body)
    assert body["error"] == "presence feeds full" and body["limit"] == "max-presence-feeds" and body["value"] == 1, body
    assert "--max-presence-feeds 1" in body["detail"], body
    reply = server.http("GET", "/feeds/_presence.lobby/events")
    assert reply.status == 503 and reply.json()["limit"] == "max-presence-feeds", reply
    lobby_stream = stream(server, "/feeds/lobby/events")  # served as ever, present nowhere
    multi = SSEClient(server.port, "/events?feed=_presence.lobby&feed=lobby")
    assert multi.status == 200, multi.head
    events = [multi.next_event(timeout=5) for _ in range(2)]
    refusal = next(event for event in events if event and event.get("event") == "notfound")
    assert "--max-presence-feeds 1" in json.loads(refusal["data"])["detail"], events
    listing = {entry["feed"]: entry for entry in server.get("/feeds")}
    assert listing["lobby"]["presence"] == "_presence.lobby", "still named where the feed is listed"
    # Counted: the two 503s, the presence feed of the multi-feed stream, and the two streams of lobby.
    wait_until(lambda: server.metrics().get("diffstream_presence_refusals_total") == 5, timeout=5,
               message=f"5 refusals counted (now {server.metrics().get('diffstream_presence_refusals_total')})")
    board_watcher.close()
    # board's presence feed is dropped (no one present or watching): lobby's can be made. The streams of lobby
    # opened past the cap count nowhere; the next one does.
    wait_until(lambda: server.http("GET", "/feeds/_presence.lobby").status == 200, timeout=10, message="room for lobby's presence feed")
    watcher = Watcher(server.port, "_presence.lobby")
    assert watcher.count() == 0, "the streams opened past the cap count nowhere"
    later = stream(server, "/feeds/lobby/events")
    watcher.until(lambda w: w.count() == 1)
    for client in (lobby_stream, multi, later, watcher):
        client.close()


def test_a_presence_feed_is_event_stream_only_it_has_no_cacheable_log(board):
    """docs/protocol.md, "Event streams only": its history is one instance's, so no cacheable log."""
    for path in ("/feeds/_presence.board/log", "/feeds/_presence.board/log?after=0"):
        reply = board.http("GET", path)
        assert reply.status == 404 and "'_presence.board' is a presence feed" in reply.json()["detail"], (path, reply.status, reply.body)


@pytest.mark.parametrize("flags, week_presence", [
    (["--demo"], "_presence.week"),                       # the demo shows who is watching every feed
    (["--demo", "--presence", "board"], None),            # unless the flags say which feeds have presence
    (["--examples", "week"], None),                       # and without --demo, none by default
])
def test_the_demo_turns_presence_with_names_on_unless_the_flags_say(start, flags, week_presence):
    server = start(*flags)
    listing = {entry["feed"]: entry for entry in server.get("/feeds")}
    assert listing["week"].get("presence") == week_presence, listing["week"]
    if week_presence:
        visitor = stream(server, "/feeds/week/events")
        watcher = Watcher(server.port, week_presence)
        watcher.until(lambda w: w.count() == 1)
        for client in (visitor, watcher):
            client.close()
