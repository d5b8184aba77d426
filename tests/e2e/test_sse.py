"""The event stream: snapshot, batches, resume, foreign ids, heartbeats, deletion, gzip."""
import json
import subprocess
import time
import urllib.parse

from e2e_helpers import SSEClient, apply_ops, normalised, snapshot, wait_for


def test_curl_sees_the_snapshot_then_a_batch_after_a_put(server):
    server.request("PUT", "/feeds/news", snapshot(("a", ["1", "2"])))
    curl = subprocess.Popen(["curl", "-sN", f"{server.url}/feeds/news/events"], stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        def read_until(prefix):
            while True:
                line = curl.stdout.readline()
                assert line, "curl ended early"
                lines.append(line)
                if line.startswith(prefix):
                    return line
        assert read_until("retry:").strip() == "retry: 2000"
        assert read_until("event:").strip() == "event: snapshot"
        data = json.loads(read_until("data:")[5:])
        assert data["version"] == 1 and data["feed"] == "news"
        server.request("PUT", "/feeds/news", snapshot(("a", ["2", "1", "3"])))
        assert read_until("event:").strip() == "event: batch"
        batch = json.loads(read_until("data:")[5:])
        assert (batch["from"], batch["version"]) == (1, 2)
        assert normalised(apply_ops(data, batch["ops"])) == normalised(snapshot(("a", ["2", "1", "3"])))
    finally:
        curl.kill()


def test_stream_headers_and_convergence_over_many_batches(server):
    states = [snapshot(("a", ["1", "2", "3"]), ("b", ["4"])), snapshot(("b", ["4", "1"]), ("c", ["5"])),
              snapshot(("c", ["5", "6", "7"]), ("a", ["3"])), snapshot(), snapshot(("z", ["1", "2"]))]
    server.request("PUT", "/feeds/conv", states[0])
    client = SSEClient(server, "/feeds/conv/events")
    assert client.status == 200
    assert client.header("Content-Type").startswith("text/event-stream")
    assert client.header("Cache-Control") == "no-cache"
    assert client.header("X-Accel-Buffering") == "no"
    assert client.header("Content-Length") is None
    assert client.next_block()["retry"] == "2000"
    first = client.next_event()
    assert first["event"] == "snapshot"
    document = json.loads(first["data"])
    for state in states[1:]:
        server.request("PUT", "/feeds/conv", state)
        event = client.next_event()
        assert event["event"] == "batch"
        batch = json.loads(event["data"])
        assert batch["from"] == document["version"] and batch["version"] == batch["from"] + 1
        document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
        assert normalised(document) == normalised(state)
    client.close()


def collect_ids(server, feed, versions):
    client = SSEClient(server, f"/feeds/{feed}/events")
    client.next_event()
    ids = []
    for _ in range(versions):
        ids.append(client.next_event()["id"])
    client.close()
    return ids


def test_resume_gives_exactly_the_missed_batches(server):
    server.request("PUT", "/feeds/r", snapshot(("a", ["0"])))
    first = SSEClient(server, "/feeds/r/events")
    seen = first.next_event()["id"]
    first.close()
    for n in range(1, 6):
        server.request("PUT", "/feeds/r", snapshot(("a", [str(i) for i in range(n + 1)])))
    # Header.
    resumed = SSEClient(server, "/feeds/r/events", headers={"Last-Event-ID": seen})
    assert resumed.next_block()["retry"] == "2000"
    events = [resumed.next_event(timeout=3) for _ in range(5)]
    assert [e["event"] for e in events] == ["batch"] * 5
    assert [json.loads(e["data"])["version"] for e in events] == [2, 3, 4, 5, 6]
    assert resumed.next_event(timeout=0.5) is None, "nothing but the missed batches"
    resumed.close()
    # Query parameter, percent-encoded.
    by_query = SSEClient(server, "/feeds/r/events?lastEventId=" + urllib.parse.quote(seen, safe=""))
    assert [json.loads(by_query.next_event()["data"])["version"] for _ in range(5)] == [2, 3, 4, 5, 6]
    by_query.close()
    # The header wins over the query.
    both = SSEClient(server, "/feeds/r/events?lastEventId=garbage", headers={"Last-Event-ID": seen})
    assert both.next_event()["event"] == "batch"
    both.close()


def test_the_current_id_gets_nothing_but_new_batches(server):
    server.request("PUT", "/feeds/cur", snapshot(("a", ["1"])))
    client = SSEClient(server, "/feeds/cur/events")
    current = client.next_event()["id"]
    client.close()
    resumed = SSEClient(server, "/feeds/cur/events", headers={"Last-Event-ID": current})
    assert resumed.next_event(timeout=0.5) is None
    server.request("PUT", "/feeds/cur", snapshot(("a", ["1", "2"])))
    assert resumed.next_event()["event"] == "batch"
    resumed.close()


def test_foreign_or_unknown_ids_get_a_snapshot(start):
    one, two = start(), start()
    for s in (one, two):
        s.request("PUT", "/feeds/f", snapshot(("a", ["1"])))
        s.request("PUT", "/feeds/f", snapshot(("a", ["1", "2"])))
    client = SSEClient(one, "/feeds/f/events")
    foreign = client.next_event()["id"]
    client.close()
    version = foreign.rsplit(".", 1)[1]
    for last_id in [foreign.replace(foreign.split(".")[1], "0123456789abcdef"), "1", "garbage", f"ds1.xyz.{version}", ""]:
        resumed = SSEClient(two, "/feeds/f/events", headers={"Last-Event-ID": last_id} if last_id else {})
        assert resumed.next_event()["event"] == "snapshot", last_id
        resumed.close()
    # Deleting and re-creating a feed starts a new history too.
    two.request("DELETE", "/feeds/f")
    two.request("PUT", "/feeds/f", snapshot(("a", ["1"])))
    two.request("PUT", "/feeds/f", snapshot(("a", ["1", "2"])))
    client = SSEClient(two, "/feeds/f/events")
    old_id = client.next_event()["id"]
    client.close()
    two.request("DELETE", "/feeds/f")
    two.request("PUT", "/feeds/f", snapshot(("a", ["1"])))
    resumed = SSEClient(two, "/feeds/f/events", headers={"Last-Event-ID": old_id})
    assert resumed.next_event()["event"] == "snapshot"
    resumed.close()


def test_outside_the_replay_window_gets_a_snapshot(start):
    server = start("--replay", "3")
    server.request("PUT", "/feeds/w", snapshot(("a", ["0"])))
    client = SSEClient(server, "/feeds/w/events")
    old = client.next_event()["id"]
    client.close()
    for n in range(1, 10):
        server.request("PUT", "/feeds/w", snapshot(("a", [str(i) for i in range(n + 1)])))
    resumed = SSEClient(server, "/feeds/w/events", headers={"Last-Event-ID": old})
    event = resumed.next_event()
    assert event["event"] == "snapshot" and json.loads(event["data"])["version"] == 10
    resumed.close()


def test_heartbeat_comments_arrive_when_idle(start):
    server = start("--heartbeat", "1")
    client = SSEClient(server, "/feeds/week/events")
    client.next_event()
    deadline = time.monotonic() + 5
    comments = []
    while not comments and time.monotonic() < deadline:
        block = client.next_block(timeout=3)
        assert block is not None
        comments = block["comment"]
    assert comments == ["heartbeat"]
    client.close()


def test_delete_sends_deleted_and_ends_the_stream(server):
    server.request("PUT", "/feeds/gone", snapshot(("a", ["1"])))
    client = SSEClient(server, "/feeds/gone/events")
    client.next_event()
    status, _, _ = server.call("DELETE", "/feeds/gone")
    assert status == 204
    event = client.next_event()
    assert event["event"] == "deleted" and json.loads(event["data"]) == {"feed": "gone"}
    assert client.next_block(timeout=5) is None and client.closed
    assert server.call("GET", "/feeds/gone/events")[0] == 404


def test_gzip_stream_decodes_event_by_event(server):
    server.request("PUT", "/feeds/gz", snapshot(("a", ["1"])))
    client = SSEClient(server, "/feeds/gz/events", gzip=True)
    assert client.header("Content-Encoding") == "gzip"
    document = json.loads(client.next_event()["data"])
    for n in range(2, 8):
        state = snapshot(("a", [str(i) for i in range(1, n + 1)][::-1]))
        server.request("PUT", "/feeds/gz", state)
        # Each event decodes as soon as it is sent: flushed, not held back until the end.
        batch = json.loads(client.next_event(timeout=5)["data"])
        document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
        assert normalised(document) == normalised(state)
    client.close()


def test_curl_compressed_receives_each_event_right_after_its_change(server):
    server.request("PUT", "/feeds/cz", snapshot(("a", ["1"])))
    curl = subprocess.Popen(["curl", "-sN", "--compressed", f"{server.url}/feeds/cz/events"], stdout=subprocess.PIPE, text=True)
    try:
        def next_data():
            while True:
                line = curl.stdout.readline()
                assert line, "curl ended"
                if line.startswith("data:"):
                    return json.loads(line[5:])
        assert next_data()["version"] == 1
        for n in range(2, 5):
            server.request("PUT", "/feeds/cz", snapshot(("a", [str(i) for i in range(n)])))
            assert next_data()["version"] == n  # arrives before the next change is even made
        server.wait_log("sse connect .* gzip")
    finally:
        curl.kill()
