"""Many subscribers, a subscriber that never reads, connection churn, running out of descriptors."""
import json
import resource
import selectors
import socket
import threading
import time

from e2e_helpers import SSEClient, snapshot, wait_for


def subscribe_raw(port, path):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    sock.setblocking(False)
    return sock


def test_500_subscribers_receive_every_batch_in_order(start):
    server = start("--log-level", "warning")
    server.request("PUT", "/feeds/fan", snapshot(("a", ["0"])))
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
                if chunk:
                    buffers[key.fileobj] += chunk
        assert until()

    pump(lambda: all(b.count(b"event: snapshot") == 1 for b in buffers.values()))
    states = [snapshot(("a", [str(i) for i in range(n, -1, -1)])) for n in range(1, 21)]
    for state in states:
        server.request("PUT", "/feeds/fan", state)
    pump(lambda: all(b.count(b"event: batch") == 20 for b in buffers.values()))
    for data in buffers.values():
        versions = [json.loads(line[6:])["version"] for line in data.decode().split("\n") if line.startswith("data: ")]
        assert versions == list(range(1, 22))
    for s in socks:
        s.close()


def test_a_subscriber_that_never_reads_does_not_delay_the_others_and_memory_stays_bounded(start):
    server = start("--stream-buffer", "262144", "--log-level", "warning")
    big_model = {"text": "x" * 2000}
    state = lambda n: {"sections": [{"id": "a", "model": None, "items": [{"id": f"{n}-{i}", "kind": "k", "model": big_model} for i in range(50)]}]}
    server.request("PUT", "/feeds/slow", state(0))
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", server.port))
    stalled.sendall(b"GET /feeds/slow/events HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
    reader = SSEClient(server, "/feeds/slow/events")
    reader.next_event()
    rss_before = server.rss_kib()
    pushed = 0
    n = 0
    while pushed < 10 * 1024 * 1024:
        n += 1
        result = server.request("PUT", "/feeds/slow", state(n))
        event = reader.next_event(timeout=5)  # the reader gets each batch at once
        assert event is not None and json.loads(event["data"])["version"] == result["version"]
        pushed += len(event["data"])
    growth_mib = (server.rss_kib() - rss_before) / 1024
    assert growth_mib < 64, f"RSS grew by {growth_mib:.1f} MiB while pushing {pushed >> 20} MiB"
    metrics = server.call("GET", "/metrics")[2].decode()
    assert "diffstream_stream_overflows_total 0" not in metrics, "the stalled subscriber was held back"
    stalled.close()
    reader.close()


def test_connection_churn(start):
    server = start("--log-level", "warning")
    errors = []

    def churn(worker):
        for i in range(750):
            try:
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                mode = (i + worker) % 4
                if mode == 1:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    sock.recv(1024)
                elif mode == 2:
                    sock.sendall(b"GET /feeds/home/events HTTP/1.1\r\nHost: x\r\n\r\n")
                    sock.recv(256)
                elif mode == 3:
                    sock.sendall(b"PUT /feeds/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")  # mid-request
                sock.close()
            except OSError as error:
                errors.append(error)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert server.request("GET", "/healthz") == {"status": "ok"}
    wait_for(lambda: "diffstream_connections_open 1\n" in server.call("GET", "/metrics")[2].decode(), message="connections back to one")


def test_running_out_of_descriptors_does_not_stop_the_accept_loop(start):
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    server = start("--max-connections", "1000", "--log-level", "warning", preexec_fn=low_limit)
    socks = []
    for _ in range(200):
        try:
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=2))
        except OSError:
            break
    assert len(socks) > 128
    wait_for(lambda: any("accept" in line and "pausing" in line for line in server.log), message="the EMFILE warning")
    for s in socks:
        s.close()
    wait_for(lambda: server.call("GET", "/healthz")[0] == 200, message="service after descriptors were freed")
    assert server.alive()


def test_a_slow_subscriber_is_caught_up_with_a_snapshot_once_it_reads_again(start):
    server = start("--stream-buffer", "65536", "--log-level", "warning")
    big_model = {"text": "y" * 1000}
    state = lambda n: {"sections": [{"id": "a", "model": None, "items": [{"id": f"{n}-{i}", "kind": "k", "model": big_model} for i in range(40)]}]}
    server.request("PUT", "/feeds/lag", state(0))
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", server.port))
    slow.sendall(b"GET /feeds/lag/events HTTP/1.1\r\nHost: x\r\n\r\n")
    n = 0
    while "diffstream_stream_overflows_total 0\n" in server.call("GET", "/metrics")[2].decode():
        n += 1
        server.request("PUT", "/feeds/lag", state(n))
        assert n < 2000, "the slow subscriber never overflowed"
    final = server.request("PUT", "/feeds/lag", state(n + 1))["version"]
    # Now read everything: the stream must end with the current state, reached through a fresh snapshot.
    slow.settimeout(1)
    data = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and f'"version":{final},'.encode() not in data:
        try:
            chunk = slow.recv(1 << 20)
        except socket.timeout:
            continue
        if not chunk:
            break
        data += chunk
    text = data.decode(errors="replace")
    assert text.count("event: snapshot") >= 2, "a resync snapshot after the first one"
    assert f'"version":{final},' in text
    slow.close()
    wait_for(lambda: "diffstream_resyncs_total 0\n" not in server.call("GET", "/metrics")[2].decode(), message="the resync metric")
