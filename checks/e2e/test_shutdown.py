"""Graceful shutdown on SIGTERM and SIGINT: streams end, new connections are refused, exit 0 within 5 s."""
import signal
import socket
import subprocess
import sys
import time

import pytest

from e2e_helpers import Conn, SSEClient


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_open_streams_end_and_the_process_exits_zero(start, signum):
    server = start()
    plain = SSEClient(server.port, "/feeds/home/events")
    zipped = SSEClient(server.port, "/feeds/week/events", gzip=True)
    plain.expect_event("snapshot")
    zipped.expect_event("snapshot")
    idle = Conn(server.port)
    idle.request("GET", "/healthz")
    assert idle.read_response().status == 200
    started = time.monotonic()
    server.send_signal(signum)
    assert plain.wait_closed(5), "the plain stream was not ended"
    assert zipped.wait_closed(5), "the gzip stream was not ended"
    assert zipped.inflater.eof and zipped.inflater.unused_data == b"", "the gzip stream ends as a complete gzip member"
    assert idle.wait_closed(5), "the idle keep-alive connection was not closed"
    assert server.process.wait(timeout=max(0.1, 5 - (time.monotonic() - started))) == 0
    assert time.monotonic() - started < 5
    server.wait_log(r"signal \d+: shutting down")
    server.wait_log(r"shut down")
    for client in (plain, zipped, idle):
        client.close()


def test_no_new_connections_after_the_signal(start):
    server = start()
    holder = SSEClient(server.port, "/feeds/home/events")  # keeps the shutdown going for a moment
    holder.expect_event("snapshot")
    server.send_signal(signal.SIGTERM)
    server.wait_log(r"shutting down")
    refused = False
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline and not refused:
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                sock.settimeout(1)
                refused = not sock.recv(100).startswith(b"HTTP/1.1 200")
        except OSError:
            refused = True
    assert refused, "a new connection was still served after the signal"
    assert server.process.wait(timeout=5) == 0
    holder.close()


def test_shutdown_with_a_stalled_subscriber_and_a_half_sent_request(start):
    server = start("--stream-buffer", "65536")

    def state(n):
        return {"sections": [{"id": "a", "items": [{"id": f"x{n}-{i}", "kind": "k", "model": {"t": "z" * 3000}} for i in range(100)]}]}

    server.put("big", state(0))
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", server.port))
    stalled.sendall(b"GET /feeds/big/events HTTP/1.1\r\nHost: x\r\n\r\n")  # never reads
    server.wait_log(r"sse connect #\d+ /feeds/big/events")
    for n in range(1, 11):
        server.put("big", state(n))
    half = Conn(server.port)
    half.send(b"PUT /feeds/h HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    started = time.monotonic()
    server.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=5) == 0
    assert time.monotonic() - started < 5
    stalled.close()
    half.close()


def test_a_signal_right_after_the_listening_line_is_not_lost(start):
    """The listening line means the server is up: a SIGTERM sent at once must stop it like any other.
    Two busy processes load the CPU meanwhile, as on a busy machine (that is when a lost signal shows)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for attempt in range(1, 31):
            server = start("--log-level", "warning")
            server.send_signal(signal.SIGTERM)
            try:
                assert server.process.wait(timeout=3) == 0
            except subprocess.TimeoutExpired:
                server.kill()
                pytest.fail(f"server {attempt} ignored a SIGTERM sent right after its listening line (still running 3 s later)")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
