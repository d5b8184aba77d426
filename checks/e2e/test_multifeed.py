"""One event stream for many feeds, `GET /events?feed=A&feed=B@ID` (issue 24 item 1): convergence of
20 feeds through seeded random writes, per-feed resume, refusals, deletion, the limits, gzip."""
import json
import random
import urllib.parse

import pytest

from e2e_helpers import (JWT_SECRET, SSEClient, apply_ops, big_state, jwt_token, normalised, overflowing_subscriber, read_stream, rights,
                         snapshot, stream_events)


def feed_id(event):
    """(feed, opaque id) of a multi-feed event's `id: NAME@ID`."""
    name, at, rest = event["id"].partition("@")
    assert at, event
    return name, rest


def events_until_quiet(client, quiet=0.4):
    events = []
    while (event := client.next_event(timeout=quiet)) is not None:
        events.append((event, json.loads(event["data"])))
    return events


def summary(events):
    return [(e.get("event"), d["feed"], d.get("version")) for e, d in events]


def test_one_stream_carries_20_feeds_through_random_writes_and_each_converges(server):
    rng = random.Random(20261125)
    feeds = [f"m{n:02d}" for n in range(20)]

    def random_state():
        doc = snapshot(*[(s, []) for s in rng.sample(["A", "B", "C"], rng.randint(0, 3))])
        for n in rng.sample(range(15), rng.randint(0, 12)):
            if doc["sections"]:
                rng.choice(doc["sections"])["items"].append({"id": f"i{n}", "kind": "row", "model": {"v": rng.randint(0, 2)}})
        return doc

    for feed in feeds:
        server.put(feed, random_state())
    query = "&".join(f"feed={f}" for f in feeds)
    with SSEClient(server.port, f"/events?{query}") as client:
        assert client.status == 200 and client.header("Content-Type") == "text/event-stream; charset=utf-8"
        assert client.next_block() == {"comment": ["heartbeat 15"], "retry": "2000"}
        documents, histories = {}, {}
        for expected in feeds:  # in the order listed
            event, data = client.expect_event("snapshot")
            name, opaque = feed_id(event)
            assert name == data["feed"] == expected and opaque == f"ds1.{data['history']}.{data['version']}"
            documents[name], histories[name] = data, data["history"]
        writes = 0
        for _ in range(300):
            feed = rng.choice(feeds)
            if server.put(feed, random_state())["ops"] > 0:
                writes += 1
        for _ in range(writes):
            event, batch = client.expect_event("batch")
            name, opaque = feed_id(event)
            document = documents[name]
            assert batch["feed"] == name and batch["history"] == histories[name] and batch["from"] == document["version"]
            assert opaque == f"ds1.{batch['history']}.{batch['version']}"
            documents[name] = {**apply_ops(document, batch["ops"]), "feed": name, "version": batch["version"]}
        assert client.next_event(timeout=0.3) is None, "nothing more than one batch per write"
    for feed in feeds:
        current = server.get(f"/feeds/{feed}")
        assert normalised(documents[feed]) == normalised(current) and documents[feed]["version"] == current["version"], feed
        # A read names the position a single-feed stream would resume from (issue 37): the same history.
        assert current["history"] == histories[feed] and current["id"] == f"ds1.{histories[feed]}.{current['version']}", feed


def test_resume_with_current_old_too_old_and_foreign_positions(start):
    server = start("--replay", "3")
    names = ["current", "old", "tooold", "foreign", "fresh"]
    for name in names:
        server.put(name, snapshot(("a", ["0"])))
    with SSEClient(server.port, "/events?" + "&".join(f"feed={n}" for n in names)) as client:
        ids = {feed_id(e)[0]: feed_id(e)[1] for e, _ in (client.expect_event("snapshot") for _ in names)}
    server.put("old", snapshot(("a", ["0", "1"])))
    server.put("old", snapshot(("a", ["0", "1", "2"])))
    for n in range(1, 7):  # past the replay window of 3 (kept up to 3 + 3/4)
        server.put("tooold", snapshot(("a", [str(i) for i in range(n + 1)])))
    server.put("foreign", snapshot(("a", ["x"])))
    server.put("fresh", snapshot(("a", ["y"])))
    positions = {"current": ids["current"], "old": ids["old"], "tooold": ids["tooold"], "foreign": "ds1.00000000000000ff.1"}
    query = "&".join(f"feed={n}" + (f"%40{urllib.parse.quote(positions[n])}" if n in positions else "") for n in names)
    with SSEClient(server.port, f"/events?{query}") as client:
        events = events_until_quiet(client)
        assert summary(events) == [("batch", "old", 2), ("batch", "old", 3), ("snapshot", "tooold", 7),
                                   ("snapshot", "foreign", 2), ("snapshot", "fresh", 2)]
        server.put("current", snapshot(("a", ["0", "z"])))
        event, batch = client.expect_event("batch")
        assert feed_id(event)[0] == "current" and (batch["from"], batch["version"]) == (1, 2)


def test_last_event_id_naming_a_listed_feed_overrides_its_position(server):
    for name in ["a", "b"]:
        server.put(name, snapshot(("s", ["1"])))
    with SSEClient(server.port, "/events?feed=a&feed=b") as client:
        first = [client.expect_event("snapshot")[0]["id"] for _ in range(2)]
    server.put("a", snapshot(("s", ["1", "2"])))
    a_at_1 = first[0]
    assert a_at_1.startswith("a@")
    # The URL says a is at a foreign position; the header (what a browser's reconnect sends) wins.
    with SSEClient(server.port, "/events?feed=a@ds1.00000000000000ff.9&feed=b", headers={"Last-Event-ID": a_at_1}) as client:
        assert summary(events_until_quiet(client)) == [("batch", "a", 2), ("snapshot", "b", 1)]
    with SSEClient(server.port, f"/events?feed=a&feed=b&lastEventId={urllib.parse.quote(a_at_1)}") as client:
        assert summary(events_until_quiet(client)) == [("batch", "a", 2), ("snapshot", "b", 1)]


@pytest.fixture
def private_server(start, tmp_path):
    secret = tmp_path / "jwt-secret"
    secret.write_text(JWT_SECRET + "\n")
    server = start("--jwt-secret-file", secret, "--private", "--public-feeds", "lobby", "--token", "admin-e2e")
    for feed in ["user-1-inbox", "user-2-inbox", "lobby"]:
        server.put(feed, snapshot(("s", ["i"])), headers={"Authorization": "Bearer admin-e2e"})
    return server


def test_refusals_inside_the_stream_under_private(private_server):
    server = private_server
    token = jwt_token(rights(subscribe=["user-1-*"]))
    query = "feed=user-2-inbox&feed=user-1-inbox&feed=user-1-missing&feed=lobby"
    with SSEClient(server.port, f"/events?{query}", headers={"Authorization": f"Bearer {token}"}) as client:
        assert client.status == 200
        events = events_until_quiet(client)
        assert [(e["event"], d["feed"], d.get("error")) for e, d in events] == [
            ("forbidden", "user-2-inbox", "forbidden"), ("snapshot", "user-1-inbox", None),
            ("notfound", "user-1-missing", "not found"), ("snapshot", "lobby", None)]
        assert all("id" not in e for e, _ in events if e["event"] != "snapshot"), "refusals carry no id"
        server.put("user-1-inbox", snapshot(("s", ["i", "j"])), headers={"Authorization": "Bearer admin-e2e"})
        event, batch = client.expect_event("batch")
        assert batch["feed"] == "user-1-inbox"
    # Without a token: the private feed is unauthorized inside the stream, the public one goes on.
    with SSEClient(server.port, "/events?feed=user-1-inbox&feed=lobby") as client:
        events = events_until_quiet(client)
        assert [(e["event"], d["feed"], d.get("error")) for e, d in events] == [("unauthorized", "user-1-inbox", "token required"),
                                                                             ("snapshot", "lobby", None)]
    # Every feed refused: a plain status.
    assert server.http("GET", "/events?feed=user-1-inbox&feed=user-2-inbox").status == 401
    assert server.http("GET", "/events?feed=user-2-inbox", headers={"Authorization": f"Bearer {token}"}).status == 403
    missing = server.http("GET", "/events?feed=user-1-x&feed=user-1-y", headers={"Authorization": f"Bearer {token}"})
    assert missing.status == 404 and "user-1-x" in missing.json()["detail"]
    expired = jwt_token(rights(subscribe=["*"], lifetime=-120))
    reply = server.http("GET", f"/events?feed=lobby&feed=user-1-inbox&authorization={expired}")
    assert reply.status == 401 and "expired" in reply.json()["detail"]


def test_a_token_expiring_ends_every_feed_then_the_stream(private_server):
    token = jwt_token(rights(subscribe=["user-1-*"], lifetime=1))
    with SSEClient(private_server.port, "/events?feed=user-1-inbox&feed=lobby", headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        assert summary(events_until_quiet(client)) == [("snapshot", "user-1-inbox", 1), ("snapshot", "lobby", 1)]
        # The server's leeway is 5 s: the stream ends at exp + 5 s.
        expiry = [client.expect_event("unauthorized", timeout=20)[1] for _ in range(2)]
        assert sorted(d["feed"] for d in expiry) == ["lobby", "user-1-inbox"] and expiry[0]["error"] == "token expired"
        assert client.wait_closed()


def test_deleting_one_feed_ends_its_part_only(server):
    for name in ["keep", "drop"]:
        server.put(name, snapshot(("s", ["1"])))
    with SSEClient(server.port, "/events?feed=keep&feed=drop") as client:
        assert summary(events_until_quiet(client)) == [("snapshot", "keep", 1), ("snapshot", "drop", 1)]
        assert server.http("DELETE", "/feeds/drop").status == 204
        event, data = client.expect_event("deleted")
        assert data == {"feed": "drop"} and "id" not in event
        server.put("drop", snapshot(("s", ["again"])))  # recreated: no longer on this stream
        server.put("keep", snapshot(("s", ["1", "2"])))
        assert summary(events_until_quiet(client)) == [("batch", "keep", 2)]
        assert server.http("DELETE", "/feeds/keep").status == 204
        client.expect_event("deleted")
        assert client.wait_closed(), "no feed left: the stream ends"


@pytest.mark.parametrize("count,status", [(100, 200), (101, 400)])
def test_the_feeds_per_stream_limit_with_the_longest_names_and_positions(server, count, status):
    server.put("x" * 64, snapshot(("s", ["1"])))
    position = "ds1." + "f" * 16 + "." + "9" * 20  # the longest id, 41 bytes
    names = ["x" * 64] + [f"{n:03d}" + "y" * 61 for n in range(count - 1)]
    query = "&".join(f"feed={name}%40{position}" for name in names)
    reply = server.http("GET", f"/events?{query}", headers={"Connection": "close"}) if status != 200 else None
    if status == 200:
        assert len(f"GET /events?{query} HTTP/1.1") > 8 * 1024, "past the 8 KiB of other paths"
        with SSEClient(server.port, f"/events?{query}") as client:
            assert client.status == 200
            event, data = client.expect_event("snapshot")
            assert data["feed"] == "x" * 64
            assert client.next_event(timeout=0.3)["event"] == "notfound"
    else:
        assert reply.status == 400 and reply.json() == {"error": "too many feeds", "detail": "at most 100 feeds per stream (--max-stream-feeds)",
                                                        "limit": "max-stream-feeds", "value": 100}


def test_the_request_line_limit_is_16_kib_on_events_only(server):
    server.put("a", snapshot(("s", ["1"])))
    with SSEClient(server.port, "/events?feed=a&pad=" + "p" * (16 * 1024 - 200)) as client:
        assert client.status == 200
        client.expect_event("snapshot")
    assert server.http("GET", "/events?feed=a&pad=" + "p" * (16 * 1024)).status == 414
    assert server.http("GET", "/feeds/a/events?pad=" + "p" * (8 * 1024)).status == 414


def test_max_stream_feeds_flag(start):
    server = start("--max-stream-feeds", "2")
    server.put("a", snapshot(("s", ["1"])))
    assert server.http("GET", "/events?feed=a&feed=b&feed=c").json()["value"] == 2


def test_gzip_on_the_multi_feed_stream_and_one_event_stream_in_metrics(server):
    feeds = ["g1", "g2", "g3"]
    for name in feeds:
        server.put(name, snapshot(("s", ["1"])))
    before = server.metrics()
    with SSEClient(server.port, "/events?feed=g1&feed=g2&feed=g3", gzip=True) as client:
        assert client.header("Content-Encoding") == "gzip"
        assert client.next_block() == {"comment": ["heartbeat 15"], "retry": "2000"}
        documents = {}
        for expected in feeds:
            event, data = client.expect_event("snapshot")
            documents[data["feed"]] = data
        for n in range(2, 6):
            for name in feeds:
                server.put(name, snapshot(("s", [str(i) for i in range(n)])))
        for _ in range(12):
            event, batch = client.expect_event("batch")
            documents[batch["feed"]] = {**apply_ops(documents[batch["feed"]], batch["ops"]), "version": batch["version"]}
        for name in feeds:
            assert normalised(documents[name]) == normalised(server.get(f"/feeds/{name}"))
        metrics = server.metrics()
        streams = [k for k in metrics if k.startswith("diffstream_event_streams_open")]
        assert streams and metrics[streams[0]] - before.get(streams[0], 0) == 1, "one event stream for three feeds"
        assert client.inflater is not None and client.compressed_bytes > 0


@pytest.mark.parametrize("quiet_opens", ["at its position", "with a snapshot"])
def test_a_slow_subscriber_gets_a_snapshot_of_each_feed_it_fell_behind_on(start, quiet_opens):
    server = start("--stream-buffer", "65536", "--log-level", "warning")
    server.put("lag", big_state(0))
    server.put("quiet", snapshot(("s", ["1"])))
    with SSEClient(server.port, "/events?feed=quiet") as client:
        quiet_at = feed_id(client.expect_event("snapshot")[0])[1]
    quiet = f"quiet@{quiet_at}" if quiet_opens == "at its position" else "quiet"
    slow, n = overflowing_subscriber(server, f"/events?feed=lag&feed={quiet}")
    final = server.put("lag", big_state(n + 1))["version"]
    # Read everything: lag reaches its current state through a fresh snapshot; quiet, which lost
    # nothing, gets no snapshot, and its next batch follows its position.
    marker = f'"version":{final},'.encode()
    data, _ = read_stream(slow, until=lambda data: marker in data and b"\n\n" in data[data.index(marker):])
    server.put("quiet", snapshot(("s", ["1", "2"])))
    marker, count = b'"feed":"quiet"', 1 if quiet_opens == "at its position" else 2
    more, _ = read_stream(slow, until=lambda more: (data + more).count(marker) >= count and b"\n\n" in (data + more)[(data + more).rindex(marker):])
    slow.close()
    events = stream_events(data + more)
    lag = [(kind, d) for kind, d in events if d["feed"] == "lag"]
    assert [kind for kind, _ in lag].count("snapshot") >= 2, "a resync snapshot after the first one"
    document = None
    for kind, payload in lag:
        if kind == "snapshot":
            document = payload
        else:
            assert payload["from"] == document["version"], "a batch that does not follow the version before it"
            document = {**apply_ops(document, payload["ops"]), "version": payload["version"]}
    assert document["version"] == final and normalised(document) == normalised(big_state(n + 1))
    # Quiet sent nothing after the overflow began (its opening snapshot, if any, went out before).
    expected = [("batch", 1, 2)] if quiet_opens == "at its position" else [("snapshot", None, 1), ("batch", 1, 2)]
    assert [(kind, d.get("from"), d["version"]) for kind, d in events if d["feed"] == "quiet"] == expected


def test_a_feed_deleted_while_the_stream_is_behind_is_told_once_it_drains(start):
    server = start("--stream-buffer", "65536", "--log-level", "warning")
    server.put("lag", big_state(0))
    server.put("gone", snapshot(("s", ["1"])))
    slow, n = overflowing_subscriber(server, "/events?feed=lag&feed=gone")
    assert server.http("DELETE", "/feeds/gone").status == 204
    final = server.put("lag", big_state(n + 1))["version"]
    marker = f'"version":{final},'.encode()
    data, _ = read_stream(slow, until=lambda data: b"event: deleted" in data and marker in data and b"\n\n" in data[data.index(marker):])
    slow.close()
    events = stream_events(data)
    assert ("deleted", {"feed": "gone"}) in events, "the deleted feed's end never reached the stream that was behind"
    assert any(kind != "deleted" and d.get("version") == final for kind, d in events), "lag did not reach its current state"
