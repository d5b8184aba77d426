"""Many subscribers, a subscriber that never reads, connection churn, resets, running out of descriptors."""
import resource
import selectors
import socket
import threading
import time
import pytest

from e2e_helpers import SSEClient, apply_ops, big_state, normalised, overflowing_subscriber, read_stream, snapshot, stream_events, wait_until

RESET = b"\x01\x00\x00\x00\x00\x00\x00\x00"  # SO_LINGER on, 0 s: close() sends a reset


def subscribe_raw(port, path, rcvbuf=None):
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    sock.setblocking(False)
    return sock


def test_500_subscribers_receive_every_batch_in_order_and_converge(start):
    server = start("--log-level", "warning", "--max-connections-per-ip", "0")  # all 500 come from 127.0.0.1
    server.put("fan", snapshot(("a", ["0"])))
    socks = [subscribe_raw(server.port, "/feeds/fan/events") for _ in range(500)]
    buffers = {s: b"" for s in socks}
    selector = selectors.DefaultSelector()
    for s in socks:
        selector.register(s, selectors.EVENT_READ)

    def pump(until, timeout=30):
        deadline = time.monotonic() + timeout
        while not until() and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                chunk = key.fileobj.recv(65536)
                assert chunk, "a subscriber's stream ended"
                buffers[key.fileobj] += chunk
        assert until(), "not every subscriber got everything in time"

    pump(lambda: all(b.count(b"event: snapshot") == 1 for b in buffers.values()))
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="fan"}') == 500, message="500 subscribers")
    states = [snapshot(("a", [str(i) for i in range(n, -1, -1)]), ("b", [f"b{n}"] if n % 2 else [])) for n in range(1, 21)]
    for state in states:
        server.put("fan", state)
    pump(lambda: all(b.count(b"event: batch") == 20 for b in buffers.values()))
    for data in buffers.values():
        events = stream_events(data)
        assert [kind for kind, _ in events] == ["snapshot"] + ["batch"] * 20
        assert [d["version"] for _, d in events] == list(range(1, 22))
        document = events[0][1]
        for _, batch in events[1:]:
            document = apply_ops(document, batch["ops"])
        assert normalised(document) == normalised(states[-1])
    for s in socks:
        selector.unregister(s)
        s.close()
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="fan"}') == 0, message="subscribers gone")


def test_a_subscriber_that_never_reads_does_not_delay_the_others_and_memory_stays_bounded(start):
    server = start("--stream-buffer", "262144", "--write-timeout", "4", "--log-level", "info")
    big_model = {"text": "x" * 2000}

    def state(n):
        return {"sections": [{"id": "a", "model": None, "items": [{"id": f"{n}-{i}", "kind": "k", "model": big_model} for i in range(50)]}]}

    server.put("slow", state(0))
    stalled = subscribe_raw(server.port, "/feeds/slow/events", rcvbuf=4096)  # and never reads
    stalled_id = server.wait_log(r"sse connect #(\d+) /feeds/slow/events").group(1)
    reader = SSEClient(server.port, "/feeds/slow/events")
    reader.expect_event("snapshot")
    rss_before = server.rss_kib()
    pushed = 0
    n = 0
    worst = 0.0
    while pushed < 10 * 1024 * 1024:
        n += 1
        changed = time.monotonic()
        result = server.put("slow", state(n))
        event, batch = reader.expect_event("batch", timeout=5)
        worst = max(worst, time.monotonic() - changed)
        assert batch["version"] == result["version"]
        pushed += len(event["data"])
    assert worst < 1.0, f"the reading subscriber waited up to {worst:.2f} s for a batch"
    growth_mib = (server.rss_kib() - rss_before) / 1024
    assert growth_mib < 64, f"RSS grew by {growth_mib:.1f} MiB while pushing {pushed >> 20} MiB"
    # The never-reader is cut off from the batches (it fell behind) and, never draining, dropped.
    server.wait_log(rf"sse #{stalled_id} fell behind")
    server.wait_log(rf"sse disconnect #{stalled_id} /feeds/slow/events \((write timeout|fell behind)\)", timeout=15)
    assert server.metrics()["diffstream_stream_overflows_total"] >= 1
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="slow"}') == 1, message="only the reader left")
    stalled.close()
    reader.close()


def test_a_slow_subscriber_is_caught_up_with_a_snapshot_once_it_reads_again(start):
    server = start("--stream-buffer", "65536", "--log-level", "warning")
    server.put("lag", big_state(0))
    slow, n = overflowing_subscriber(server, "/feeds/lag/events")
    final = server.put("lag", big_state(n + 1))["version"]
    # Now read everything: the stream must reach the current state through a fresh snapshot.
    marker = f'"version":{final},'.encode()
    data, _ = read_stream(slow, until=lambda data: marker in data and b"\n\n" in data[data.index(marker):])
    slow.close()
    events = stream_events(data)
    assert [kind for kind, _ in events].count("snapshot") >= 2, "a resync snapshot after the first one"
    # Whatever arrived is consistent: each batch follows the version before it, and the end is the current state.
    document = None
    for kind, payload in events:
        if kind == "snapshot":
            document = payload
        else:
            assert payload["from"] == document["version"], "a batch that does not follow the version before it"
            document = {**apply_ops(document, payload["ops"]), "version": payload["version"]}
    assert document["version"] == final and normalised(document) == normalised(big_state(n + 1))
    assert server.metrics()["diffstream_resyncs_total"] >= 1


@pytest.mark.parametrize("path", ["/feeds/lag/events", "/events?feed=lag"])
def test_a_slow_subscriber_of_a_deleted_feed_still_gets_deleted(start, path):
    server = start("--stream-buffer", "65536", "--log-level", "warning")
    server.put("lag", big_state(0))
    slow, _ = overflowing_subscriber(server, path)
    # Deleted while the stream is behind (its events dropped): the stream still ends with event: deleted,
    # on the single-feed route and on /events (whose only feed it was).
    assert server.http("DELETE", "/feeds/lag").status == 204
    data, ended = read_stream(slow)
    slow.close()
    assert ended, "the stream of a deleted feed did not end"
    events = stream_events(data)
    assert events and events[-1] == ("deleted", {"feed": "lag"}), f"the stream ended with {events[-1] if events else 'nothing'}, not deleted"


def test_connection_churn(start):
    server = start("--log-level", "warning")
    fds_before = server.open_fds()
    errors = []

    def churn(worker):
        for i in range(750):
            try:
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                mode = (i + worker) % 6
                if mode == 1:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    sock.recv(1024)
                elif mode == 2:
                    sock.sendall(b"GET /feeds/home/events HTTP/1.1\r\nHost: x\r\n\r\n")
                    sock.recv(256)  # mid-SSE
                elif mode == 3:
                    sock.sendall(b"PUT /feeds/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")  # mid-body
                elif mode == 4:
                    sock.sendall(b"GET /feeds/home HTTP/1.1\r\nHo")  # mid-head
                elif mode == 5:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
                    sock.sendall(b"GET /feeds/week/events HTTP/1.1\r\nHost: x\r\n\r\n")  # a reset mid-request
                sock.close()
            except OSError as error:
                errors.append(error)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert server.get("/healthz") == {"status": "ok"}
    wait_until(lambda: server.metrics()["diffstream_connections_open"] == 1, message="connections back to one (this request)")
    assert server.metrics()["diffstream_connections_accepted_total"] >= 3000
    wait_until(lambda: server.open_fds() <= fds_before + 2, message=f"descriptors back near {fds_before}")
    with SSEClient(server.port, "/feeds/home/events") as client:
        client.expect_event("snapshot")
    wait_until(lambda: server.metrics()["diffstream_event_streams_open"] == 0, timeout=3, message="no event stream left open")
    wait_until(lambda: server.metrics()['diffstream_feed_subscribers{feed="home"}'] == 0, timeout=3, message="no home subscribers left")


def test_clients_that_reset_before_their_stream_starts_leave_no_subscriber_behind(server):
    """A client that sends an event-stream request and resets the connection at once (SO_LINGER 0)."""
    for _ in range(100):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
        sock.sendall(b"GET /feeds/week/events HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.close()
    wait_until(lambda: server.metrics()["diffstream_connections_open"] == 1, message="every connection closed")

    def leftovers():
        metrics = server.metrics()
        return {"week subscribers": metrics['diffstream_feed_subscribers{feed="week"}'],
                "open event streams": metrics["diffstream_event_streams_open"]}

    try:
        wait_until(lambda: set(leftovers().values()) == {0}, timeout=3, message="no subscriber left")
    except AssertionError:
        raise AssertionError(f"phantom subscribers with no connection left behind: {leftovers()}") from None


def test_running_out_of_descriptors_does_not_stop_the_server(start):
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    server = start("--max-connections", "1000", "--log-level", "warning", preexec_fn=low_limit)
    socks = []
    try:
        for _ in range(200):
            try:
                socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=2))
            except OSError:
                break
        assert len(socks) > 128
        assert server.alive()
        server.wait_log(r"pausing accept", timeout=10)
    finally:
        for s in socks:
            s.close()
    wait_until(lambda: server.http("GET", "/healthz").status == 200, message="service after descriptors were freed")
    with SSEClient(server.port, "/feeds/home/events") as client:
        client.expect_event("snapshot")
    assert server.alive()
