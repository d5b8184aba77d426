"""The HTTP API against the real binary."""
import http.client
import re
import socket

import pytest

from e2e_helpers import raw, snapshot


def test_health_and_metrics(server):
    assert server.request("GET", "/healthz") == {"status": "ok"}
    status, headers, body = server.call("GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    for name in ["diffstream_connections_open", "diffstream_events_sent_total", "diffstream_bytes_sent_total",
                 'diffstream_feed_subscribers{feed="home"}', "diffstream_feed_batches_total", "diffstream_diff_seconds_count"]:
        assert name in body.decode(), name


def test_put_get_list_delete(server):
    status, _, body = server.call("PUT", "/feeds/list", snapshot(("a", ["1", "2"])))
    assert (status, body) == (201, {"feed": "list", "version": 1, "ops": 3})
    status, _, body = server.call("PUT", "/feeds/list", {"sections": [{"id": "a", "model": {"title": "a"}, "items": [
        {"id": "1", "kind": "card", "model": {"t": "1"}}, {"id": "2", "kind": "card", "model": {"t": "2"}}]}]})
    assert (status, body) == (200, {"feed": "list", "version": 1, "ops": 0})
    status, _, body = server.call("PUT", "/feeds/list", snapshot(("a", ["2", "1"])))
    assert (status, body) == (200, {"feed": "list", "version": 2, "ops": 1})
    document = server.request("GET", "/feeds/list")
    assert document["version"] == 2 and [i["id"] for i in document["sections"][0]["items"]] == ["2", "1"]
    assert {"feed": "list", "version": 2} in server.request("GET", "/feeds")
    assert server.call("DELETE", "/feeds/list")[0] == 204
    assert server.call("GET", "/feeds/list")[0] == 404


def test_key_order_is_not_a_change(server):
    server.request("PUT", "/feeds/k", {"sections": [{"id": "a", "model": {"x": 1, "y": [1, {"p": 1, "q": 2}]}, "items": []}]})
    assert server.request("PUT", "/feeds/k", {"sections": [{"id": "a", "model": {"y": [1, {"q": 2, "p": 1}], "x": 1.0}, "items": []}]})["ops"] == 0


@pytest.mark.parametrize("body,status,mention", [
    (b"{not json", 400, "invalid JSON"),
    (b'{"sections":[{"id":"a","items":[{"id":"1","kind":"k"},{"id":"1","kind":"k"}]}]}', 422, "'1'"),
    (b'{"sections":[{"id":"a","items":[]},{"id":"b","items":[{"id":"","kind":"k"}]}]}', 422, "sections[1].items[0].id"),
    (b'{"sections":[{"id":"' + b"x" * 257 + b'","items":[]}]}', 422, "invalid id"),
    (b'{"sections":"nope"}', 422, "sections"),
])
def test_bad_snapshots_are_refused_and_change_nothing(server, body, status, mention):
    server.request("PUT", "/feeds/v", snapshot(("a", ["1"])))
    got, _, error = server.call("PUT", "/feeds/v", raw=body)
    assert got == status and mention in error["detail"] and set(error) == {"error", "detail"}
    assert server.request("GET", "/feeds/v")["version"] == 1


def test_body_over_the_limit_is_413(start):
    server = start("--max-body", "1000")
    status, _, error = server.call("PUT", "/feeds/big", raw=b'{"sections":[' + b" " * 2000 + b"]}")
    assert status == 413 and "1000" in error["detail"]
    assert server.request("GET", "/healthz")


@pytest.mark.parametrize("path", ["/feeds/.hidden", "/feeds/" + "x" * 65, "/feeds/a%2Fb", "/feeds/nope", "/feeds/nope/events"])
def test_unknown_or_invalid_feeds_are_404(server, path):
    assert server.call("GET", path)[0] == 404


def test_view_model_feeds_are_not_writable_with_put_or_delete(server):
    assert server.call("PUT", "/feeds/home", snapshot())[0] == 409
    assert server.call("DELETE", "/feeds/week")[0] == 409


def test_token_guards_writes(start):
    server = start("--token", "correct-horse")
    status, headers, error = server.call("PUT", "/feeds/t", snapshot())
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer") and "Authorization" in error["detail"]
    assert server.call("PATCH", "/feeds/home", {"banner": None}, headers={"Authorization": "Bearer wrong"})[0] == 401
    assert server.call("POST", "/feeds/blackjack/actions/deal", headers={"Authorization": "Basic Y29ycmVjdC1ob3JzZQ=="})[0] == 401
    assert server.call("PUT", "/feeds/t", snapshot(), headers={"Authorization": "Bearer correct-horse"})[0] == 201
    assert server.call("GET", "/feeds/t")[0] == 200


def test_cors_when_allowed(start):
    server = start("--allow-origin", "https://example.com")
    _, headers, _ = server.call("GET", "/feeds")
    assert headers["Access-Control-Allow-Origin"] == "https://example.com"
    status, headers, _ = server.call("OPTIONS", "/feeds/x")
    assert status == 204 and "PUT" in headers["Access-Control-Allow-Methods"] and "Last-Event-ID" in headers["Access-Control-Allow-Headers"]


def test_methods(server):
    status, headers, _ = server.call("DELETE", "/healthz")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    assert server.call("BREW", "/")[0] == 501


def test_head_has_headers_and_no_body(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request("HEAD", "/feeds/home")
    response = connection.getresponse()
    assert response.status == 200 and int(response.getheader("Content-Length")) > 100
    assert response.read() == b""
    connection.request("GET", "/healthz")  # the same connection still works
    assert connection.getresponse().read() == b'{"status":"ok"}\n'


def test_keep_alive_and_pipelining_answer_in_order(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        paths = ["/healthz", "/feeds/week", "/feeds", "/nope", "/healthz"]
        sock.sendall(b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths[:-1])
                     + f"GET {paths[-1]} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    statuses = re.findall(r"HTTP/1\.1 (\d{3}) ", data.decode(errors="replace"))
    assert statuses == ["200", "200", "200", "404", "200"]
    assert data.index(b'"feed":"week"') < data.index(b'[{"feed"')


def test_gzip_for_large_json_only(server):
    _, headers, _ = server.call("GET", "/feeds/home", headers={"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in headers["Vary"]
    _, headers, _ = server.call("GET", "/healthz", headers={"Accept-Encoding": "gzip"})
    assert headers["Content-Encoding"] is None


def test_chunked_and_expect_continue(server):
    body = b'{"sections":[]}'
    response = raw(server, b"PUT /feeds/ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 201")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"PUT /feeds/ex HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 15\r\nConnection: close\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        assert sock.recv(1000).startswith(b"HTTP/1.1 201")


def test_ipv6_loopback(start):
    if not socket.has_ipv6:
        return
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        return  # no IPv6 on this machine
    server = start("--host", "::1")
    with socket.create_connection(("::1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b'{"status":"ok"}\n')
