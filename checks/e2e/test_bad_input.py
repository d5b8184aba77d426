"""Bad input over a raw socket: each gets its answer, the connection closes, and the server keeps serving."""
import json
import re
import socket
import time

import pytest

from e2e_helpers import Conn, parse_metrics, raw, read_to_close, wait_until

H = b"Host: x\r\n"
STATUS_LINE = re.compile(rb"(?:^|\r\n)HTTP/1\.1 \d{3} ")
CASES = [
    ("request line over 8 KiB", b"GET /" + b"a" * 8179 + b" HTTP/1.1\r\n" + H + b"\r\n", 414),
    ("request line over 8 KiB, head unfinished", b"GET /" + b"a" * 9000, 414),
    ("header section over 32 KiB", b"GET / HTTP/1.1\r\n" + H + b"X-Big: " + b"b" * 33000 + b"\r\n\r\n", 431),
    ("header section over 32 KiB, head unfinished", b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 600) for i in range(60)), 431),
    ("more than 100 fields", b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: v\r\n" % i for i in range(100)) + b"\r\n", 431),
    ("body over the limit", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: 99999999\r\n\r\n", 413),
    ("Content-Length and Transfer-Encoding", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("differing Content-Lengths", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc", 400),
    ("differing Content-Lengths in one field", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: 2, 3\r\n\r\nabc", 400),
    ("Content-Length not a number", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n", 400),
    ("Content-Length negative", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: -1\r\n\r\n", 400),
    ("Content-Length with a sign", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Content-Length: +2\r\n\r\n{}", 400),
    ("obs-fold", b"GET / HTTP/1.1\r\n" + H + b"X-A: 1\r\n  folded\r\n\r\n", 400),
    ("bare CR", b"GET / HTTP/1.1\r\n" + H + b"X-A: 1\rX-B: 2\r\n\r\n", 400),
    ("bare LF after the request line", b"GET / HTTP/1.1\n" + H + b"\r\n", 400),
    ("bare LF line endings only", b"GET / HTTP/1.1\n" + b"Host: x\n\n", 400),
    ("space before the colon", b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    ("invalid field name", b"GET / HTTP/1.1\r\n" + H + b"X@Y: 1\r\n\r\n", 400),
    ("field without a colon", b"GET / HTTP/1.1\r\n" + H + b"NoColon\r\n\r\n", 400),
    ("NUL in a value", b"GET / HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n\r\n", 400),
    ("HTTP/1.2", b"GET / HTTP/1.2\r\n" + H + b"\r\n", 505),
    ("HTTP/2.0", b"GET / HTTP/2.0\r\n" + H + b"\r\n", 505),
    ("HTTP/x", b"GET / HTTP/x\r\n" + H + b"\r\n", 400),
    ("not HTTP", b"GET / SPDY/3\r\n" + H + b"\r\n", 400),
    ("missing Host", b"GET / HTTP/1.1\r\n\r\n", 400),
    ("two Hosts", b"GET / HTTP/1.1\r\n" + H + b"Host: y\r\n\r\n", 400),
    ("space in the target", b"GET /a b HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("non-ASCII target", "GET /\u00e9 HTTP/1.1\r\n".encode() + H + b"\r\n", 400),
    ("target not a path", b"GET healthz HTTP/1.1\r\n" + H + b"\r\n", 400),
    ("unsupported transfer coding", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip\r\n\r\n", 501),
    ("Transfer-Encoding in HTTP/1.0", b"PUT /feeds/x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ("invalid chunk size", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", 400),
    ("negative chunk size", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n\r\n", 400),
    ("chunk size with a sign", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n+2\r\n{}\r\n0\r\n\r\n", 400),
    ("chunk data without CRLF", b"PUT /feeds/x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n", 400),
    ("unknown method", b"BREW /pot HTTP/1.1\r\n" + H + b"\r\n", 501),
    ("binary garbage", bytes(range(1, 128)) + b"\r\n\r\n", 400),
    ("TLS hello on the plain port", bytes.fromhex("160301002a010000260303") + b"\x00" * 38 + b"\r\n\r\n", 400),
]


def case_param(case):
    return pytest.param(*case[1:], id=case[0])


@pytest.mark.parametrize("data,status", [case_param(c) for c in CASES])
def test_bad_request_gets_its_answer_and_the_connection_closes(start, data, status):
    server = start("--header-timeout", "3")  # a server per case: one that crashes takes no other case with it
    # What comes after a bad request on the same connection is never answered.
    follow_up = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    response, closed = raw(server.port, data + follow_up if data.endswith(b"\r\n\r\n") else data, timeout=2.5)
    assert closed, f"the connection was left open; got {response[:120]!r}"
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), head[:100]
    assert b"\r\nConnection: close\r\n" in head + b"\r\n"
    error = json.loads(body)
    assert set(error) == {"error", "detail"} and error["detail"]
    assert len(STATUS_LINE.findall(response)) == 1, "a request after a bad one was answered"
    assert server.get("/healthz") == {"status": "ok"}


def test_an_oversized_body_is_logged_with_its_method_and_path(server):
    """The head is read before the body is refused: the 413's log line names them, not `- - 413`
    (and, like every line, without the query string)."""
    mark = server.mark()
    response, closed = raw(server.port, b"PUT /feeds/toobig?token=never-logged HTTP/1.1\r\n" + H + b"Content-Length: 99999999\r\n\r\n")
    assert closed and response.startswith(b"HTTP/1.1 413 ")
    line = server.wait_log(r"PUT /feeds/toobig 413 \d+B \d+ms", since=mark).string
    assert "never-logged" not in server.log_text() and " - - 413" not in line


def test_smuggling_attempt_does_not_reach_a_second_request(server):
    before = server.get("/feeds/blackjack")["version"]
    response, closed = raw(server.port, b"POST /feeds/blackjack/actions/deal HTTP/1.1\r\n" + H
                           + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"0\r\n\r\nPOST /feeds/blackjack/actions/deal HTTP/1.1\r\n" + H + b"\r\n")
    assert closed and len(STATUS_LINE.findall(response)) == 1 and response.startswith(b"HTTP/1.1 400")
    assert server.get("/feeds/blackjack")["version"] == before


def test_requests_up_to_the_limits_are_fine(server):
    at_limit = b"GET /" + b"a" * 8178 + b" HTTP/1.1\r\n"  # 8192 bytes before the CRLF
    response, _ = raw(server.port, at_limit + H + b"Connection: close\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 404 ")
    hundred = b"GET /healthz HTTP/1.1\r\n" + H + b"".join(b"X-%d: v\r\n" % i for i in range(98)) + b"Connection: close\r\n\r\n"
    assert raw(server.port, hundred)[0].startswith(b"HTTP/1.1 200 ")
    big_header = b"GET /healthz HTTP/1.1\r\n" + H + b"X-Big: " + b"b" * 30000 + b"\r\nConnection: close\r\n\r\n"
    assert raw(server.port, big_header)[0].startswith(b"HTTP/1.1 200 ")


def test_slowloris_is_closed_after_the_header_timeout(start):
    server = start("--header-timeout", "2")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        started = time.monotonic()
        closed_after = None
        while time.monotonic() - started < 8:
            try:
                sock.sendall(b"X")  # one byte a second, never finishing the head
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - started
                break
            assert server.get("/healthz") == {"status": "ok"}  # meanwhile others are served
            data, closed = read_to_close(sock, 1.0)
            if closed:
                closed_after = time.monotonic() - started
                assert b"HTTP/1.1 200" not in data
                break
        assert closed_after is not None, "the slow request was never cut off"
        assert 1.5 < closed_after < 4, f"closed after {closed_after:.1f} s with --header-timeout 2"
    server.wait_log(r"request head timeout")
    assert server.get("/healthz") == {"status": "ok"}


def test_idle_keep_alive_connections_are_closed(start):
    server = start("--idle-timeout", "2")
    conn = Conn(server.port, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.read_response().status == 200
    started = time.monotonic()
    assert conn.wait_closed(6), "the idle connection was kept"
    assert 1.5 < time.monotonic() - started < 4
    conn.close()
    # A connection that is never idle that long is kept, although it lives longer than the timeout.
    conn = Conn(server.port, timeout=10)
    for _ in range(4):
        conn.request("GET", "/healthz")
        assert conn.read_response().status == 200
        assert not conn.wait_closed(0.8)
    conn.close()


def test_a_connection_that_never_sends_anything_is_closed(start):
    server = start("--idle-timeout", "2", "--header-timeout", "2")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        started = time.monotonic()
        data, closed = read_to_close(sock, 6)
        assert closed and data == b"" and time.monotonic() - started < 4


def test_a_body_that_does_not_arrive_in_time_gets_408(start):
    server = start("--body-timeout", "2")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"PUT /feeds/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"sections\":")
        started = time.monotonic()
        data, closed = read_to_close(sock, 6)
        assert closed and data.startswith(b"HTTP/1.1 408") and b"Connection: close" in data
        assert 1.5 < time.monotonic() - started < 4
    assert server.http("GET", "/feeds/slow").status == 404


def test_the_connection_cap_answers_503_and_keeps_serving_the_others(start):
    server = start("--max-connections", "5")
    held = [Conn(server.port) for _ in range(5)]
    try:
        held[0].request("GET", "/healthz")
        assert held[0].read_response().status == 200  # so all five are accepted by now
        refused = []
        for _ in range(3):
            data, closed = raw(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            refused.append((data.split(b"\r\n", 1)[0], closed))
            head, _, body = data.partition(b"\r\n\r\n")
            assert b"Retry-After:" in head and set(json.loads(body)) == {"error", "detail"}
        assert refused == [(b"HTTP/1.1 503 Service Unavailable", True)] * 3
        for conn in held:  # the connections within the cap are still served
            conn.request("GET", "/healthz")
            assert conn.read_response().status == 200
    finally:
        for conn in held:
            conn.close()
    wait_until(lambda: server.http("GET", "/healthz").status == 200, message="service after the connections closed")
    assert server.metrics()["diffstream_connections_refused_total"] >= 3


def test_the_per_ip_cap_answers_503_and_frees_the_slot_when_a_connection_closes(start):
    server = start("--max-connections-per-ip", "3")
    held = [Conn(server.port) for _ in range(3)]
    try:
        for conn in held:
            conn.request("GET", "/healthz")
            assert conn.read_response().status == 200  # all three are admitted by now
        data, closed = raw(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _, body = data.partition(b"\r\n\r\n")
        assert closed and head.startswith(b"HTTP/1.1 503 "), head[:100]
        assert b"\r\nConnection: close\r\n" in head + b"\r\n" and b"Retry-After:" in head
        assert "your address" in json.loads(body)["detail"]
        held.pop().close()

        def metrics():  # over a held connection: a new one would count against the cap
            held[0].request("GET", "/metrics")
            return parse_metrics(held[0].read_response().body.decode())

        # The slot is freed once the server has seen the close: a new connection is admitted again.
        wait_until(lambda: metrics()["diffstream_connections_open"] == 2, message="the closed connection counted out")
        assert metrics()["diffstream_connections_refused_per_ip_total"] == 1
        again = Conn(server.port)
        held.append(again)
        again.request("GET", "/healthz")
        assert again.read_response().status == 200
    finally:
        for conn in held:
            conn.close()
    assert server.metrics()["diffstream_connections_refused_total"] == 1


def test_the_per_ip_cap_can_be_turned_off(start):
    server = start("--max-connections-per-ip", "0", "--max-connections", "100")
    held = [Conn(server.port) for _ in range(60)]
    try:
        for conn in held:
            conn.request("GET", "/healthz")
            assert conn.read_response().status == 200
    finally:
        for conn in held:
            conn.close()
    assert server.metrics()["diffstream_connections_refused_total"] == 0


def test_a_stream_that_makes_no_write_progress_is_dropped(start):
    server = start("--write-timeout", "2", "--stream-buffer", "65536")
    big = {"text": "z" * 4000}

    def state(n):
        return {"sections": [{"id": "a", "model": None, "items": [{"id": f"{n}-{i}", "kind": "k", "model": big} for i in range(30)]}]}

    server.put("stall", state(0))
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", server.port))
    stalled.sendall(b"GET /feeds/stall/events HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
    server.wait_log(r"sse connect #\d+ /feeds/stall/events")
    for n in range(1, 60):
        server.put("stall", state(n))
    server.wait_log(r"write timeout", timeout=10)
    server.wait_log(r"sse disconnect #\d+ /feeds/stall/events \(write timeout\)", timeout=5)
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="stall"}') == 0, message="the subscriber gone")
    stalled.close()
