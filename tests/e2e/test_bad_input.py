"""Bad input over a raw socket: each gets its answer, the connection closes, and the server keeps serving."""
import json
import socket
import time

import pytest

from e2e_helpers import raw, wait_for

H = b"Host: x\r\n"
CASES = [
    ("request line over 8 KiB", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
    ("header section over 32 KiB", b"GET / HTTP/1.1\r\n" + H + b"X-Big: " + b"b" * 33000 + b"\r\n\r\n", 431),
    ("more than 100 fields", b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n", 431),
    ("body over the limit", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: 99999999\r\n\r\n", 413),
    ("Content-Length and Transfer-Encoding", b"POST /feeds/blackjack/actions/deal HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("differing Content-Lengths", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("obs-fold", b"GET / HTTP/1.1\r\n" + H + b"X-A: 1\r\n  folded\r\n\r\n", 400),
    ("bare CR", b"GET / HTTP/1.1\r\n" + H + b"X-A: 1\rX-B: 2\r\n\r\n", 400),
    ("bare LF", b"GET / HTTP/1.1\n" + H + b"\r\n", 400),
    ("space before the colon", b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    ("bad field name", b"GET / HTTP/1.1\r\n" + H + b"X@Y: 1\r\n\r\n", 400),
    ("NUL in a value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n\r\n", 400),
    ("HTTP/1.2", b"GET / HTTP/1.2\r\n" + H + b"\r\n", 505),
    ("not HTTP", b"GET / SPDY/3\r\n" + H + b"\r\n", 400),
    ("missing Host", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("unsupported transfer coding", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\n", 501),
    ("unknown method", b"BREW /pot HTTP/1.1\r\n" + H + b"\r\n", 501),
    ("binary garbage", bytes(range(1, 128)) + b"\r\n\r\n", 400),
    ("TLS hello on the plain port", bytes.fromhex("160301002a010000260303") + b"\x00" * 38 + b"\r\n\r\n", 400),
]


@pytest.mark.parametrize("name,data,status", CASES, ids=[c[0] for c in CASES])
def test_bad_request_gets_its_answer_and_the_connection_closes(server, name, data, status):
    response = raw(server, data)
    assert not response.endswith(b"<timeout>"), "the server kept the connection open"
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), head[:80]
    assert b"Connection: close" in head
    error = json.loads(body)
    assert set(error) == {"error", "detail"} and error["detail"]
    assert server.request("GET", "/healthz") == {"status": "ok"}


def test_smuggling_attempt_does_not_reach_a_second_request(server):
    response = raw(server, b"POST /feeds/blackjack/actions/deal HTTP/1.1\r\n" + H + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"0\r\n\r\nPOST /feeds/blackjack/actions/deal HTTP/1.1\r\n" + H + b"\r\n")
    assert response.count(b"HTTP/1.1 ") == 1 and response.startswith(b"HTTP/1.1 400")
    assert server.request("GET", "/feeds/blackjack")["version"] == 1


def test_slowloris_is_closed_after_the_header_timeout(start):
    server = start("--header-timeout", "2")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 8:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                sock.settimeout(1)
                if sock.recv(1024) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        assert closed and time.monotonic() - started < 6
    assert server.request("GET", "/healthz")


def test_idle_keep_alive_connections_are_closed(start):
    server = start("--idle-timeout", "2")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        response = b""
        while not response.endswith(b'{"status":"ok"}\n'):
            response += sock.recv(4096)
        assert response.startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert sock.recv(4096) == b""
        assert 1.5 < time.monotonic() - started < 6


def test_connection_cap_answers_503(start):
    server = start("--max-connections", "5")
    held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    try:
        wait_for(lambda: "diffstream_connections_open 5" in open_metrics(held[0]), message="5 open connections")
        response = raw(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert response.startswith(b"HTTP/1.1 503")
    finally:
        for sock in held:
            sock.close()
    wait_for(lambda: server.call("GET", "/healthz")[0] == 200, message="service after the connections closed")


def open_metrics(sock):
    sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(5)
    data = b""
    while b"diffstream_resyncs_total" not in data:
        data += sock.recv(65536)
    return data.decode()


def test_a_body_that_does_not_arrive_in_time_gets_408(start):
    server = start("--body-timeout", "2")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"PUT /feeds/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"sections\":")
        started = time.monotonic()
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
        assert data.startswith(b"HTTP/1.1 408") and b"Connection: close" in data
        assert 1.5 < time.monotonic() - started < 6
    assert server.call("GET", "/feeds/slow")[0] == 404


def test_a_stream_that_makes_no_write_progress_is_dropped(start):
    server = start("--write-timeout", "2", "--stream-buffer", "65536", "--log-level", "info")
    big = {"text": "z" * 4000}
    state = lambda n: {"sections": [{"id": "a", "model": None, "items": [{"id": f"{n}-{i}", "kind": "k", "model": big} for i in range(30)]}]}
    server.request("PUT", "/feeds/stall", state(0))
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", server.port))
    stalled.sendall(b"GET /feeds/stall/events HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
    server.wait_log("sse connect")
    for n in range(1, 60):
        server.request("PUT", "/feeds/stall", state(n))
    server.wait_log(r"write timeout", timeout=10)
    server.wait_log(r"sse disconnect .*/feeds/stall/events", timeout=5)
    stalled.close()
