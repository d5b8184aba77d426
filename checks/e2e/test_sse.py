"""The event stream: snapshot, batches, convergence, resume, foreign ids, heartbeats, deletion, gzip."""
import json
import queue
import random
import re
import subprocess
import threading
import time
import urllib.parse

import pytest

from e2e_helpers import SSEClient, apply_ops, check_minimal, normalised, snapshot, wait_until

ID = re.compile(r"^ds1\.[0-9a-f]{16}\.(\d+)$")


def event_version(event):
    match = ID.match(event["id"])
    assert match, f"unexpected id {event['id']!r}"
    return int(match.group(1))


def at_version(event_id, version):
    """The same history's id for another version."""
    return event_id.rsplit(".", 1)[0] + f".{version}"


class LineReader:
    """Reads a subprocess' stdout lines on a thread, so the test can wait with a timeout."""

    def __init__(self, process):
        self.lines = queue.Queue()
        threading.Thread(target=self._run, args=(process,), daemon=True).start()

    def _run(self, process):
        for line in process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def until(self, prefix, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line starting with {prefix!r} within {timeout} s") from None
            assert line is not None, "the stream ended"
            if line.startswith(prefix):
                return line.rstrip("\n")


def test_curl_sees_the_snapshot_then_a_batch_after_a_put(server):
    server.put("news", snapshot(("a", ["1", "2"])))
    curl = subprocess.Popen(["curl", "-sN", f"http://127.0.0.1:{server.port}/feeds/news/events"], stdout=subprocess.PIPE, text=True)
    try:
        lines = LineReader(curl)
        assert lines.until("retry:") == "retry: 2000"
        assert lines.until("event:") == "event: snapshot"
        assert ID.match(lines.until("id:")[4:])
        document = json.loads(lines.until("data:")[5:])
        assert (document["feed"], document["version"]) == ("news", 1)
        server.put("news", snapshot(("a", ["2", "1", "3"])))
        assert lines.until("event:") == "event: batch"
        assert lines.until("id:").endswith(".2")
        batch = json.loads(lines.until("data:")[5:])
        assert (batch["feed"], batch["from"], batch["version"]) == ("news", 1, 2)
        assert normalised(apply_ops(document, batch["ops"])) == normalised(snapshot(("a", ["2", "1", "3"])))
    finally:
        curl.kill()
        curl.wait()


def test_stream_head_and_first_lines(server):
    with SSEClient(server.port, "/feeds/week/events") as client:
        assert client.status == 200
        assert client.header("Content-Type") == "text/event-stream; charset=utf-8"
        assert client.header("Cache-Control") == "no-cache"
        assert client.header("X-Accel-Buffering") == "no"
        assert client.header("Content-Length") is None and client.header("Transfer-Encoding") is None
        assert client.next_block() == {"comment": ["heartbeat 15"], "retry": "2000"}, "first the retry line and the heartbeat announcement"
        first = client.next_block()
        assert first["event"] == "snapshot" and event_version(first) == 1
        assert json.loads(first["data"])["feed"] == "week"


def test_batches_converge_and_are_minimal(server):
    states = [snapshot(("a", ["1", "2", "3"]), ("b", ["4"])), snapshot(("b", ["4", "1"]), ("c", ["5"])),
              snapshot(("c", ["5", "6", "7"]), ("a", ["3"])), snapshot(), snapshot(("z", ["1", "2"])),
              snapshot(("z", ["2", "1"]), ("y", [])), snapshot(("y", ["1"]), ("z", ["2"]))]
    server.put("conv", states[0])
    with SSEClient(server.port, "/feeds/conv/events") as client:
        event, document = client.expect_event("snapshot")
        assert normalised(document) == normalised(states[0]) and event_version(event) == document["version"] == 1
        for state in states[1:]:
            server.put("conv", state)
            event, batch = client.expect_event("batch")
            assert batch["feed"] == "conv"
            assert batch["from"] == document["version"] and batch["version"] == batch["from"] + 1 == event_version(event)
            check_minimal(document, state, batch["ops"])
            document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
            assert normalised(document) == normalised(state)


def test_random_changes_converge(server):
    """Seeded random snapshots (sections and items appearing, vanishing, moving across sections,
    changing models): every batch applies strictly, is minimal, and reaches the PUT state."""
    rng = random.Random(20261122)

    def random_state():
        section_ids = rng.sample(["A", "B", "C", "D", "E"], rng.randint(0, 5))
        doc = {"sections": [{"id": s, "model": rng.choice([None, {"t": s}, {"t": s + "!"}, [1, 2], "s", 3.5]), "items": []}
                            for s in section_ids]}
        for n in rng.sample(range(40), rng.randint(0, 30)):
            if doc["sections"]:
                rng.choice(doc["sections"])["items"].append({"id": f"i{n}", "kind": rng.choice(["card", "row"]),
                                                             "model": rng.choice([None, {"v": rng.randint(0, 2)}])})
        return doc

    server.put("fuzz", {"sections": []})
    with SSEClient(server.port, "/feeds/fuzz/events") as client:
        _, document = client.expect_event("snapshot")
        for _ in range(150):
            state = random_state()
            result = server.put("fuzz", state)
            if result["ops"] == 0:
                assert normalised(document) == normalised(state)
                continue
            _, batch = client.expect_event("batch")
            assert len(batch["ops"]) == result["ops"] and batch["from"] == document["version"]
            check_minimal(document, state, batch["ops"])
            document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
            assert normalised(document) == normalised(state)
    assert server.get("/feeds/fuzz")["version"] == document["version"]


def read_events(client, quiet=0.3):
    """Every event until the stream stays quiet for `quiet` seconds: [(event, data)]."""
    events = []
    while True:
        event = client.next_event(timeout=quiet)
        if event is None:
            return events
        events.append((event["event"], json.loads(event["data"])))


@pytest.fixture
def history(server):
    """A feed at version 6 and the id a subscriber saw at version 1."""
    server.put("r", snapshot(("a", ["0"])))
    with SSEClient(server.port, "/feeds/r/events") as client:
        first, _ = client.expect_event("snapshot")
    for n in range(1, 6):
        server.put("r", snapshot(("a", [str(i) for i in range(n + 1)])))
    return server, first["id"]


def test_resume_with_last_event_id_gives_exactly_the_missed_batches(history):
    server, seen = history
    with SSEClient(server.port, "/feeds/r/events", headers={"Last-Event-ID": seen}) as client:
        assert client.next_block() == {"comment": ["heartbeat 15"], "retry": "2000"}, "the retry line and the heartbeat announcement come first, on their own"
        events = read_events(client)
    assert [kind for kind, _ in events] == ["batch"] * 5, "only the missed batches, no snapshot"
    assert [(d["from"], d["version"]) for _, d in events] == [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    document = snapshot(("a", ["0"]))
    for _, batch in events:
        document = apply_ops(document, batch["ops"])
    assert normalised(document) == normalised(snapshot(("a", ["0", "1", "2", "3", "4", "5"])))
    server.wait_log(rf"sse connect #\d+ /feeds/r/events from \S+ last-event-id={re.escape(seen)}")


def test_resume_with_the_query_parameter(history):
    server, seen = history
    for query, expected in [(urllib.parse.quote(seen, safe=""), [2, 3, 4, 5, 6]), (seen, [2, 3, 4, 5, 6]),
                            (urllib.parse.quote(at_version(seen, 3), safe=""), [4, 5, 6])]:
        with SSEClient(server.port, f"/feeds/r/events?lastEventId={query}") as client:
            events = read_events(client)
        assert [(k, d["version"]) for k, d in events] == [("batch", v) for v in expected], query


def test_the_header_wins_over_the_query_parameter(history):
    server, seen = history
    at_four = at_version(seen, 4)
    with SSEClient(server.port, f"/feeds/r/events?lastEventId={urllib.parse.quote(seen)}", headers={"Last-Event-ID": at_four}) as client:
        assert [(k, d["version"]) for k, d in read_events(client)] == [("batch", 5), ("batch", 6)]
    with SSEClient(server.port, f"/feeds/r/events?lastEventId={urllib.parse.quote(at_four)}", headers={"Last-Event-ID": seen}) as client:
        assert [(k, d["version"]) for k, d in read_events(client)] == [("batch", v) for v in range(2, 7)]
    with SSEClient(server.port, f"/feeds/r/events?lastEventId={urllib.parse.quote(seen)}", headers={"Last-Event-ID": "garbage"}) as client:
        assert [(k, d["version"]) for k, d in read_events(client)] == [("snapshot", 6)]


def test_the_current_id_gets_nothing_but_the_retry_line_then_new_batches(history):
    server, seen = history
    with SSEClient(server.port, "/feeds/r/events", headers={"Last-Event-ID": at_version(seen, 6)}) as client:
        assert client.next_block() == {"comment": ["heartbeat 15"], "retry": "2000"}
        assert client.next_event(timeout=0.7) is None
        server.put("r", snapshot(("a", ["x"])))
        _, batch = client.expect_event("batch")
        assert (batch["from"], batch["version"]) == (6, 7)


def test_foreign_unknown_or_malformed_ids_get_a_fresh_snapshot(start):
    one, two = start(), start()
    for s in (one, two):
        s.put("f", snapshot(("a", ["1"])))
        s.put("f", snapshot(("a", ["1", "2"])))
        s.put("other", snapshot(("a", ["1"])))
        s.put("other", snapshot(("a", ["2"])))
    with SSEClient(one.port, "/feeds/f/events") as client:
        foreign, _ = client.expect_event("snapshot")
    with SSEClient(two.port, "/feeds/f/events") as client:
        own, _ = client.expect_event("snapshot")
    with SSEClient(two.port, "/feeds/other/events") as client:
        other_feed, _ = client.expect_event("snapshot")
    history = own["id"].split(".")[1]
    candidates = {
        "another process": at_version(foreign["id"], 1),
        "another feed": at_version(other_feed["id"], 1),
        "unknown history": "ds1.0123456789abcdef.1",
        "a future version": f"ds1.{history}.7",
        "version zero": f"ds1.{history}.0",
        "negative version": f"ds1.{history}.-1",
        "huge version": f"ds1.{history}.99999999999999999999999",
        "upper-case history": f"ds1.{history.upper()}.1" if history.upper() != history else "ds1.ZZZZZZZZZZZZZZZZ.1",
        "other prefix": f"ds2.{history}.1",
        "trailing junk": f"ds1.{history}.1x",
        "extra part": f"ds1.{history}.1.1",
        "just a number": "1",
        "garbage": "garbage \u00e9\u00e8",
        "empty": "",
        "very long": "x" * 5000,
    }
    for name, last_id in candidates.items():
        with SSEClient(two.port, "/feeds/f/events", headers={"Last-Event-ID": last_id}) as client:
            events = read_events(client, quiet=0.25)
        assert [(k, d["version"]) for k, d in events] == [("snapshot", 2)], name
    # A deleted and re-created feed is another history, even at a version it has again.
    with SSEClient(two.port, "/feeds/f/events") as client:
        old, _ = client.expect_event("snapshot")
    two.ok("DELETE", "/feeds/f")
    two.put("f", snapshot(("b", ["9"])))
    two.put("f", snapshot(("b", ["9", "8"])))
    with SSEClient(two.port, "/feeds/f/events", headers={"Last-Event-ID": at_version(old["id"], 1)}) as client:
        events = read_events(client, quiet=0.25)
    assert [(k, d["version"]) for k, d in events] == [("snapshot", 2)]
    assert normalised(events[0][1]) == normalised(snapshot(("b", ["9", "8"])))


def test_the_replay_window(start):
    server = start("--replay", "4")
    server.put("w", snapshot(("a", ["0"])))
    with SSEClient(server.port, "/feeds/w/events") as client:
        first, _ = client.expect_event("snapshot")
    for n in range(1, 9):
        server.put("w", snapshot(("a", [str(i) for i in range(n + 1)])))
    outcomes = {}
    for version in range(1, 10):
        with SSEClient(server.port, "/feeds/w/events", headers={"Last-Event-ID": at_version(first["id"], version)}) as client:
            outcomes[version] = [(k, d["version"]) for k, d in read_events(client, quiet=0.25)]
    # The window holds (at least) the last 4 batches: versions 6..9.
    for version in range(5, 10):
        assert outcomes[version] == [("batch", v) for v in range(version + 1, 10)], (version, outcomes[version])
    # Well outside it, a snapshot.
    for version in range(1, 3):
        assert outcomes[version] == [("snapshot", 9)], (version, outcomes[version])
    for version in range(3, 5):  # just outside: a snapshot or, if kept a little longer, exactly the batches
        assert outcomes[version] in ([("snapshot", 9)], [("batch", v) for v in range(version + 1, 10)]), (version, outcomes[version])


def test_heartbeat_comments_arrive_at_least_every_heartbeat_seconds_when_idle(start):
    server = start("--heartbeat", "1")
    with SSEClient(server.port, "/feeds/week/events") as client, SSEClient(server.port, "/feeds/week/events", gzip=True) as zipped:
        client.expect_event("snapshot")
        zipped.expect_event("snapshot")
        last = time.monotonic()
        gaps = []
        for _ in range(3):
            block = client.next_block(timeout=3)
            assert block is not None and block["comment"] == ["heartbeat"] and "data" not in block, block
            now = time.monotonic()
            gaps.append(round(now - last, 2))
            last = now
        gzipped = zipped.next_block(timeout=3)
        assert gzipped is not None and gzipped["comment"] == ["heartbeat"], "heartbeats on gzip streams too"
    assert max(gaps) <= 1.25, f"with --heartbeat 1 the gaps between heartbeats were {gaps} s"


def test_no_heartbeat_while_events_flow(start):
    server = start("--heartbeat", "2")
    server.put("busy", snapshot(("a", ["0"])))
    with SSEClient(server.port, "/feeds/busy/events") as client:
        client.expect_event("snapshot")
        last_event = time.monotonic()
        for n in range(1, 8):
            server.put("busy", snapshot(("a", [str(n)])))
            block = client.next_block(timeout=3)
            if block is not None and block.get("comment") == ["heartbeat"] and time.monotonic() - last_event >= 2:
                block = client.next_block(timeout=3)  # due: the PUT took the stream past 2 s without an event
            assert block is not None and block.get("event") == "batch", f"a heartbeat although an event went out: {block}"
            last_event = time.monotonic()
            time.sleep(0.4)  # the pace of the changes, not synchronisation


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_delete_sends_deleted_and_ends_the_stream(server, compressed):
    server.put("gone", snapshot(("a", ["1"])))
    client = SSEClient(server.port, "/feeds/gone/events", gzip=compressed)
    client.expect_event("snapshot")
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="gone"}') == 1, message="the subscriber counted")
    assert server.http("DELETE", "/feeds/gone").status == 204
    event, data = client.expect_event("deleted")
    assert data == {"feed": "gone"} and "id" not in event
    assert client.wait_closed(5), "the stream ends after the deleted event"
    assert client.text.strip() == ""
    if compressed:
        assert client.inflater.eof and client.inflater.unused_data == b"", "a complete gzip member"
    client.close()
    assert server.http("GET", "/feeds/gone/events").status == 404
    assert 'diffstream_feed_subscribers{feed="gone"}' not in server.metrics()


def test_a_gzip_stream_decodes_event_by_event(server):
    server.put("gz", snapshot(("a", ["1"])))
    with SSEClient(server.port, "/feeds/gz/events", gzip=True) as client:
        assert client.header("Content-Encoding") == "gzip" and "accept-encoding" in client.header("Vary").lower()
        assert client.inflater is not None
        _, document = client.expect_event("snapshot")
        for n in range(2, 10):
            state = snapshot(("a", [str(i) for i in range(1, n + 1)][::-1]), ("b", [f"b{n}"]))
            before = client.compressed_bytes
            server.put("gz", state)
            # Each event can be decoded as soon as it is sent: flushed, not held back.
            _, batch = client.expect_event("batch", timeout=3)
            assert client.compressed_bytes > before
            document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
            assert normalised(document) == normalised(state)
        assert not client.inflater.eof


def test_curl_compressed_receives_each_event_right_after_its_change(server):
    server.put("cz", snapshot(("a", ["1"])))
    curl = subprocess.Popen(["curl", "-sN", "--compressed", f"http://127.0.0.1:{server.port}/feeds/cz/events"],
                            stdout=subprocess.PIPE, text=True)
    try:
        lines = LineReader(curl)
        assert json.loads(lines.until("data:")[5:])["version"] == 1
        server.wait_log(r"sse connect #\d+ /feeds/cz/events .* gzip")
        for n in range(2, 7):
            server.put("cz", snapshot(("a", [str(i) for i in range(n)])))
            changed = time.monotonic()  # acknowledged: the batch went out before (a commit through Redis may be slow)
            assert json.loads(lines.until("data:", timeout=2)[5:])["version"] == n
            assert time.monotonic() - changed < 1.0, "the event was held back"
    finally:
        curl.kill()
        curl.wait()


def test_a_snapshot_larger_than_the_stream_buffer_still_arrives_whole(start):
    server = start("--stream-buffer", "262144")
    big = {"sections": [{"id": "a", "items": [{"id": f"i{n}", "kind": "k", "model": {"text": "x" * 1000}} for n in range(3000)]}]}
    server.put("huge", big)
    for compressed in (False, True):
        with SSEClient(server.port, "/feeds/huge/events", gzip=compressed) as client:
            _, document = client.expect_event("snapshot", timeout=20)
            assert normalised(document) == normalised(big)
    with SSEClient(server.port, "/feeds/huge/events") as client:
        _, document = client.expect_event("snapshot", timeout=20)
        big["sections"][0]["items"].reverse()
        server.put("huge", big)
        _, batch = client.expect_event("batch", timeout=20)
        assert normalised(apply_ops(document, batch["ops"])) == normalised(big)


def test_subscribing_to_an_unknown_feed_is_404_and_head_is_headers_only(server):
    reply = server.http("GET", "/feeds/nope/events")
    assert reply.status == 404 and set(reply.json()) == {"error", "detail"}
    reply = server.http("HEAD", "/feeds/week/events")
    assert reply.status == 200 and reply.body == b"" and reply.headers["Content-Type"].startswith("text/event-stream")


def test_streams_are_not_cut_by_the_idle_or_header_timeouts(start):
    server = start("--idle-timeout", "1", "--header-timeout", "1", "--heartbeat", "60")
    server.put("quiet", snapshot(("a", ["1"])))
    with SSEClient(server.port, "/feeds/quiet/events") as client:
        client.expect_event("snapshot")
        assert client.next_event(timeout=2.5) is None and not client.closed, "a quiet stream was closed"
        server.put("quiet", snapshot(("a", ["2"])))
        _, batch = client.expect_event("batch")
        assert batch["version"] == 2
