"""The HTTP API against the real binary: feeds, PUT semantics, errors, token, CORS, HEAD, keep-alive."""
import gzip
import json
import socket
import threading
import unicodedata

import pytest

from e2e_helpers import Conn, SSEClient, raw, snapshot, wait_until


def test_healthz(server):
    reply = server.http("GET", "/healthz")
    assert reply.status == 200 and reply.json() == {"status": "ok"}
    assert reply.headers["Content-Type"].startswith("application/json")


def test_metrics_expose_the_documented_series(server):
    reply = server.http("GET", "/metrics")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
    values = server.metrics()  # every line parses
    for name in ["diffstream_connections_open", 'diffstream_feed_subscribers{feed="home"}', "diffstream_diff_seconds_sum",
                 "diffstream_diff_seconds_count", "diffstream_events_sent_total", "diffstream_bytes_sent_total"]:
        assert name in values, f"{name} missing from /metrics"
    assert values["diffstream_connections_open"] >= 1  # this request's own connection
    # Batches are counted per feed: the series is declared, and a sample appears with the first batch.
    assert "# TYPE diffstream_feed_batches_total counter" in reply.body.decode()
    server.ok("POST", "/feeds/blackjack/actions/deal")
    assert server.metrics()['diffstream_feed_batches_total{feed="blackjack"}'] == 1


def test_metrics_histograms_are_labelled_by_route_pattern_and_follow_batches(server):
    server.put("hist", snapshot(("a", ["1"])))
    with SSEClient(server.port, "/feeds/hist/events") as client:
        client.expect_event("snapshot")
        wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="hist"}') == 1, message="1 subscriber")
        before = server.metrics().get("diffstream_publish_to_last_write_seconds_count", 0)
        server.put("hist", snapshot(("a", ["1", "2"])))
        client.expect_event("batch")
        wait_until(lambda: server.metrics()["diffstream_publish_to_last_write_seconds_count"] > before,
                   message="the batch's broadcast to its last write recorded")
    reply = server.http("GET", "/metrics")
    text = reply.body.decode()
    values = server.metrics()
    assert "# HELP diffstream_http_request_duration_seconds " in text and "# TYPE diffstream_http_request_duration_seconds histogram" in text
    assert values['diffstream_http_request_duration_seconds_count{route="/feeds/{feed}",status="201"}'] >= 1
    assert values['diffstream_http_request_duration_seconds_count{route="/feeds/{feed}",status="200"}'] >= 1
    assert values['diffstream_http_request_duration_seconds_count{route="/feeds/{feed}/events",status="200"}'] >= 1
    assert not any('route="/feeds/hist' in key for key in values)  # a pattern, never the raw path
    assert "# TYPE diffstream_publish_to_last_write_seconds histogram" in text


def test_metrics_follow_what_happens(server):
    before = server.metrics()
    server.put("m", snapshot(("a", ["1"])))
    clients = [SSEClient(server.port, "/feeds/m/events") for _ in range(2)]
    for client in clients:
        client.expect_event("snapshot")
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="m"}') == 2, message="2 subscribers")
    server.put("m", snapshot(("a", ["1", "2"])))
    server.put("m", snapshot(("a", ["1", "2"])))  # no change: no batch
    server.put("m", snapshot(("a", ["2"])))
    for client in clients:
        client.expect_event("batch")
        client.expect_event("batch")
    after = server.metrics()
    assert 'diffstream_feed_batches_total{feed="m"}' not in before
    assert after['diffstream_feed_batches_total{feed="m"}'] == 2
    assert after["diffstream_diff_seconds_count"] > before["diffstream_diff_seconds_count"]
    assert after["diffstream_diff_seconds_sum"] >= before["diffstream_diff_seconds_sum"]
    assert after["diffstream_events_sent_total"] - before["diffstream_events_sent_total"] >= 6
    assert after["diffstream_bytes_sent_total"] > before["diffstream_bytes_sent_total"]
    for client in clients:
        client.close()
    wait_until(lambda: server.metrics().get('diffstream_feed_subscribers{feed="m"}') == 0, message="subscribers back to 0")
    wait_until(lambda: server.metrics()["diffstream_connections_open"] == 1, message="only the metrics connection open")


def test_put_get_list_delete(server):
    reply = server.http("PUT", "/feeds/list", json_body=snapshot(("a", ["1", "2"]), ("b", [])))
    assert (reply.status, reply.json()) == (201, {"feed": "list", "version": 1, "ops": 4})  # 2 sections + 2 items
    document = server.get("/feeds/list")
    assert document["feed"] == "list" and document["version"] == 1
    assert [s["id"] for s in document["sections"]] == ["a", "b"]
    assert document["sections"][0]["items"][1] == {"id": "2", "kind": "card", "model": {"t": "2"}}
    reply = server.http("PUT", "/feeds/list", json_body=snapshot(("a", ["2", "1"]), ("b", [])))
    assert (reply.status, reply.json()) == (200, {"feed": "list", "version": 2, "ops": 1})
    reply = server.http("PUT", "/feeds/list", json_body=snapshot(("b", ["3"])))
    assert (reply.status, reply.json()["version"]) == (200, 3)
    assert {"feed": "list", "version": 3, "kind": "snapshot"} in server.get("/feeds")
    reply = server.http("DELETE", "/feeds/list")
    assert reply.status == 204 and reply.body == b""
    assert server.http("GET", "/feeds/list").status == 404
    assert server.http("DELETE", "/feeds/list").status == 404
    assert all(entry["feed"] != "list" for entry in server.get("/feeds"))
    # Re-created: a new feed at version 1.
    reply = server.http("PUT", "/feeds/list", json_body=snapshot())
    assert (reply.status, reply.json()) == (201, {"feed": "list", "version": 1, "ops": 0})


def test_feed_list_is_sorted_and_holds_the_view_models(server):
    for name in ["zeta", "alpha", "Mid"]:
        server.put(name, snapshot())
    listing = server.get("/feeds")
    names = [entry["feed"] for entry in listing]
    assert names == sorted(names)
    assert {"home", "week", "blackjack", "forecast", "todo", "zeta", "alpha", "Mid"} <= set(names)
    for entry in listing:
        if entry["feed"] in ("zeta", "alpha", "Mid"):
            assert entry == {"feed": entry["feed"], "version": 1, "kind": "snapshot"}
        elif entry["kind"] == "family":  # the home family, listed once (issue 38)
            assert entry == {"feed": "home.*", "kind": "family", "family": "home", "live": 0, "patch": True, "actions": []}
        else:
            assert set(entry) == {"feed", "version", "kind", "patch", "actions"} and entry["kind"] == "viewModel"
    by_name = {entry["feed"]: entry for entry in listing}
    assert by_name["home"]["patch"] is True and by_name["home"]["actions"] == []
    assert by_name["blackjack"]["actions"] == [{"name": "deal", "public": True, "fields": []}]
    assert by_name["forecast"]["actions"] == [{"name": "select", "public": True, "fields": [
        {"name": "day", "type": "item", "itemKind": "day", "optional": False, "nullable": False}]}]
    assert [a["name"] for a in by_name["todo"]["actions"]] == ["add", "toggle", "rename", "remove", "move", "clearDone"]


def test_equal_content_makes_no_version_and_no_event(server):
    server.put("same", {"sections": [{"id": "a", "model": {"x": 1, "y": [1, {"p": 1, "q": "s"}]},
                                      "items": [{"id": "1", "kind": "k", "model": {"a": True, "b": None}}]}]})
    with SSEClient(server.port, "/feeds/same/events") as client:
        client.expect_event("snapshot")
        reordered = {"sections": [{"items": [{"model": {"b": None, "a": True}, "kind": "k", "id": "1"}],
                                   "model": {"y": [1, {"q": "s", "p": 1}], "x": 1}, "id": "a"}]}
        reply = server.http("PUT", "/feeds/same", json_body=reordered)
        assert (reply.status, reply.json()) == (200, {"feed": "same", "version": 1, "ops": 0})
        assert client.next_event(timeout=0.7) is None, "an unchanged PUT must not send an event"
        # Numbers compare by value (documented: 1 equals 1.0).
        assert server.http("PUT", "/feeds/same", body=json.dumps(reordered).replace('"x": 1', '"x": 1.0').encode()).json()["ops"] == 0
        # Array order is content, though.
        changed = json.loads(json.dumps(reordered))
        changed["sections"][0]["model"]["y"].reverse()
        assert server.put("same", changed) == {"feed": "same", "version": 2, "ops": 1}
        _, batch = client.expect_event("batch")
        assert (batch["from"], batch["version"]) == (1, 2)
        assert batch["ops"] == [{"op": "updateSection", "section": "a", "model": {"y": [{"q": "s", "p": 1}, 1], "x": 1}}]


def test_put_answers_the_size_of_the_batch_it_caused(server):
    server.put("n", snapshot(("a", ["1", "2", "3"])))
    with SSEClient(server.port, "/feeds/n/events") as client:
        client.expect_event("snapshot")
        for state in [snapshot(("a", ["3", "1"]), ("b", ["2", "4"])), snapshot(("b", ["4"])), snapshot(("c", ["9"]), ("b", ["4"]))]:
            result = server.put("n", state)
            _, batch = client.expect_event("batch")
            assert result["ops"] == len(batch["ops"]) > 0 and result["version"] == batch["version"]


def test_concurrent_puts_each_report_their_own_version(server):
    server.put("race", snapshot(("a", ["0"])))
    results = []
    lock = threading.Lock()

    def put(n):
        result = server.put("race", snapshot(("a", [str(n)])))
        with lock:
            results.append(result)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(1, 21)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r["version"] for r in results) == list(range(2, 22))


def test_values_round_trip_exactly(server):
    model = {"text": "line1\nline2\r\n\ttab \"quoted\" back\\slash \u2028 \u0000 \u001f end", "emoji": "😀👍🏽", "cjk": "漢字",
             "int": 9007199254740991, "neg": -42, "float": 0.1, "exp": 1.5e300, "tiny": 5e-324, "list": [True, False, None, [], {}],
             "nested": {"deep": [[[[{"k": "v"}]]]]}}
    document = {"sections": [{"id": "s", "model": model, "items": [{"id": "i", "kind": "k", "model": model}]}]}
    server.put("values", document)
    got = server.get("/feeds/values")
    assert got["sections"][0]["model"] == model and got["sections"][0]["items"][0]["model"] == model
    with SSEClient(server.port, "/feeds/values/events") as client:
        event, data = client.expect_event("snapshot")
        assert "\n" not in event["data"], "every data is exactly one line of JSON"
        assert data["sections"][0]["model"] == model


BAD_SNAPSHOTS = [
    ("not JSON", b"{not json", 400, "invalid JSON"),
    ("empty body", b"", 400, "invalid JSON"),
    ("trailing garbage", b'{"sections":[]} trailing', 400, "invalid JSON"),
    ("duplicate key", b'{"sections":[],"sections":[]}', 400, "duplicate key"),
    ("unterminated", b'{"sections":[{"id":"a","items":[]}]', 400, "invalid JSON"),
    ("nested 5000 deep", b"[" * 5000 + b"]" * 5000, 400, "invalid JSON"),
    ("duplicate item in a section", b'{"sections":[{"id":"a","items":[{"id":"1","kind":"k"},{"id":"1","kind":"k"}]}]}', 422, "'1'"),
    ("duplicate item across sections", b'{"sections":[{"id":"a","items":[{"id":"x","kind":"k"}]},{"id":"b","items":[{"id":"x","kind":"k"}]}]}', 422, "'x'"),
    ("duplicate section", b'{"sections":[{"id":"dup"},{"id":"dup"}]}', 422, "'dup'"),
    ("empty id", b'{"sections":[{"id":"a","items":[]},{"id":"b","items":[{"id":"","kind":"k"}]}]}', 422, "sections[1].items[0].id"),
    ("id of 257 bytes", b'{"sections":[{"id":"' + b"x" * 257 + b'","items":[]}]}', 422, "sections[0].id"),
    ("id of 129 characters, 258 bytes", ('{"sections":[{"id":"' + "\u00e9" * 129 + '"}]}').encode(), 422, "sections[0].id"),
    ("id not a string", b'{"sections":[{"id":7}]}', 422, "sections[0].id"),
    ("kind missing", b'{"sections":[{"id":"a","items":[{"id":"1"}]}]}', 422, "sections[0].items[0].kind"),
    ("kind empty", b'{"sections":[{"id":"a","items":[{"id":"1","kind":""}]}]}', 422, "sections[0].items[0].kind"),
    ("items not an array", b'{"sections":[{"id":"a","items":{}}]}', 422, "sections[0].items"),
    ("sections not an array", b'{"sections":"nope"}', 422, "sections"),
    ("no sections", b'{"nothing":[]}', 422, "sections"),
    ("not an object", b"[]", 422, "$"),
]


@pytest.mark.parametrize("body,status,mention", [c[1:] for c in BAD_SNAPSHOTS], ids=[c[0] for c in BAD_SNAPSHOTS])
def test_bad_snapshots_are_refused_and_change_nothing(shared_server, body, status, mention):
    server = shared_server
    server.put("v", snapshot(("a", ["1"])))
    reply = server.http("PUT", "/feeds/v", body=body)
    assert reply.status == status, reply
    error = reply.json()
    assert set(error) == {"error", "detail"} and mention in error["detail"], error
    assert server.get("/feeds/v")["version"] == 1
    assert server.http("PUT", "/feeds/never", body=body).status == status
    assert server.http("GET", "/feeds/never").status == 404


def test_ids_of_up_to_256_utf8_bytes_are_accepted(server):
    longest = "\u00e9" * 128  # 128 characters, 256 bytes
    document = {"sections": [{"id": longest, "items": [{"id": "x" * 256, "kind": "k" * 256}]}]}
    assert server.http("PUT", "/feeds/long", json_body=document).status == 201
    assert server.get("/feeds/long")["sections"][0]["id"] == longest


def test_ids_and_strings_are_exact_code_points_not_canonical_equivalents(server):
    """JSON strings are sequences of code points: "é" (U+00E9) and "é" (e + U+0301) are different ids
    and different values, so both may coexist, and changing one into the other is a change."""
    composed, decomposed = "\u00e9", "e\u0301"
    assert unicodedata.normalize("NFC", decomposed) == composed and composed != decomposed
    both = {"sections": [{"id": "a", "items": [{"id": composed, "kind": "k"}, {"id": decomposed, "kind": "k"}]}]}
    reply = server.http("PUT", "/feeds/nfc", json_body=both)
    assert reply.status == 201, f"two distinct ids refused as duplicates: {reply.body!r}"
    server.put("text", {"sections": [{"id": "a", "model": {"t": composed}}]})
    result = server.put("text", {"sections": [{"id": "a", "model": {"t": decomposed}}]})
    assert result["ops"] == 1, "the model changed, so there must be an updateSection"
    assert server.get("/feeds/text")["sections"][0]["model"]["t"] == decomposed


def test_a_20_digit_integer_round_trips_through_put_and_get(server):
    body = b'{"sections":[{"id":"s","model":{"big":12345678901234567890},"items":[{"id":"a","kind":"k","model":{"n":123456789012345678901234567890.5}}]}]}'
    assert server.http("PUT", "/feeds/exact", body=body).status == 201
    reply = server.http("GET", "/feeds/exact")
    assert b'"model":{"big":12345678901234567890}' in reply.body, reply.body
    assert b'{"n":1.234567890123456789012345678905e+29}' in reply.body, reply.body  # exact; the canonical spelling
    assert reply.json()["sections"][0]["model"]["big"] == 12345678901234567890  # Python reads integers exactly


def test_a_change_beyond_double_precision_is_a_one_operation_batch(server):
    def body(n):
        return b'{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"n":%d}}]}]}' % n
    assert server.http("PUT", "/feeds/ids", body=body(2**53)).status == 201
    with SSEClient(server.port, "/feeds/ids/events") as client:
        client.expect_event("snapshot")
        reply = server.http("PUT", "/feeds/ids", body=body(2**53 + 1))
        assert reply.status == 200 and reply.json()["ops"] == 1, reply
        fields, data = client.expect_event("batch")
        assert '"ops":[{"op":"update","item":"a","kind":"k","model":{"n":9007199254740993}}]' in fields["data"], fields
        assert data["ops"][0]["model"]["n"] == 2**53 + 1
    assert server.http("PUT", "/feeds/ids", body=body(2**53 + 1)).json()["ops"] == 0


def test_any_number_the_grammar_allows_is_accepted_and_kept(server):
    body = b'{"sections":[{"id":"s","model":{"huge":1e400,"tiny":-1E-400,"long":0.1000000000000000000000000001,"same":1.00}}]}'
    reply = server.http("PUT", "/feeds/numbers", body=body)
    assert reply.status == 201, reply
    document = server.http("GET", "/feeds/numbers").body
    assert b'"model":{"huge":1e+400,"long":0.1000000000000000000000000001,"same":1,"tiny":-1e-400}' in document, document
    # Equal values in another spelling and key order are no change.
    same = b'{"sections":[{"id":"s","model":{"same":1,"tiny":-0.1e-399,"long":1000000000000000000000000001e-28,"huge":10E399}}]}'
    assert server.http("PUT", "/feeds/numbers", body=same).json()["ops"] == 0


def test_body_over_the_limit_is_413_and_the_limit_itself_is_fine(start):
    server = start("--max-body", "1000")
    body = b'{"sections":[' + b" " * (1000 - 15) + b"]}"
    assert len(body) == 1000
    assert server.http("PUT", "/feeds/edge", body=body).status == 201
    reply = server.http("PUT", "/feeds/big", body=body + b" ")
    assert reply.status == 413 and "1000" in reply.json()["detail"]
    chunked, closed = raw(server.port, b"PUT /feeds/big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          + b"".join(b"200\r\n" + b" " * 512 + b"\r\n" for _ in range(3)) + b"0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 413 ") and closed
    assert server.http("GET", "/feeds/big").status == 404
    assert server.get("/healthz") == {"status": "ok"}


@pytest.mark.parametrize("name,valid", [
    ("a", True), ("x" * 64, True), ("A-Z_a.z-0.9", True), ("-dash", True), ("_under", True), ("v1.2", True),
    ("x" * 65, False), (".hidden", False), ("..", False), ("%2e%2e", False), ("a%20b", False), ("%C3%BC", False),
    ("a~b", False), ("a%00", False),
])
def test_feed_ids(shared_server, name, valid):
    server = shared_server
    reply = server.http("PUT", f"/feeds/{name}", json_body=snapshot())
    assert reply.status == (201 if valid else 404), reply
    if not valid:
        assert set(reply.json()) == {"error", "detail"}
    assert server.http("GET", f"/feeds/{name}").status == (200 if valid else 404)
    if not valid:
        assert server.http("GET", f"/feeds/{name}/events").status == 404


@pytest.mark.parametrize("method,path", [("GET", "/feeds/nope"), ("DELETE", "/feeds/nope"), ("GET", "/feeds/nope/events"),
                                         ("GET", "/feeds/"), ("GET", "/feeds/nope/other"), ("POST", "/feeds/home/actions/nope"),
                                         ("POST", "/feeds/nope/actions/deal")])
def test_unknown_things_are_404_with_a_json_error(shared_server, method, path):
    server = shared_server
    reply = server.http(method, path)
    assert reply.status == 404 and set(reply.json()) == {"error", "detail"}


def test_an_encoded_slash_is_not_a_path_separator(server):
    """`/feeds/news%2Fevents` names the feed "news/events" (not a valid id): 404, not news' event stream."""
    server.put("news", snapshot(("a", ["1"])))
    answers = {}
    for request in [b"GET /feeds/news%2Fevents", b"DELETE /feeds/news%2F", b"PUT /feeds/a%2Fb", b"GET /feeds/a%2Fb"]:
        data, _ = raw(server.port, request + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", timeout=2)
        answers[request.decode()] = data.split(b"\r\n", 1)[0].decode()
    assert all(status.startswith("HTTP/1.1 404 ") for status in answers.values()), answers
    assert server.http("GET", "/feeds/news").status == 200


@pytest.mark.parametrize("feed", ["home", "week", "blackjack", "forecast"])
def test_view_model_feeds_refuse_put_and_delete(shared_server, feed):
    server = shared_server
    before = server.get(f"/feeds/{feed}")
    reply = server.http("PUT", f"/feeds/{feed}", json_body=snapshot(("a", ["1"])))
    assert reply.status == 409 and set(reply.json()) == {"error", "detail"}
    assert server.http("DELETE", f"/feeds/{feed}").status == 409
    assert server.get(f"/feeds/{feed}") == before


WRITES = [("PUT", "/feeds/t", snapshot()), ("DELETE", "/feeds/existing", None), ("PATCH", "/feeds/home", {"banner": None}),
          ("POST", "/feeds/blackjack/actions/deal", None), ("POST", "/feeds/forecast/actions/select", {"day": "d-tue"})]


def test_the_token_guards_every_write_and_only_writes(start):
    token = "correct-horse-battery"
    server = start("--token", token)
    good = {"Authorization": f"Bearer {token}"}
    assert server.http("PUT", "/feeds/existing", json_body=snapshot(), headers=good).status == 201
    versions = {f: server.get(f"/feeds/{f}")["version"] for f in ["home", "blackjack", "forecast"]}
    for method, path, body in WRITES:
        for headers in [{}, {"Authorization": "Bearer wrong-token-xx"}, {"Authorization": f"Basic {token}"},
                        {"Authorization": token}, {"Authorization": f"Bearer {token}x"}, {"Authorization": f"Bearer {token[:-1]}"}]:
            reply = server.http(method, path, json_body=body, headers=headers)
            assert reply.status == 401, (method, path, headers, reply)
            assert reply.headers["WWW-Authenticate"].startswith("Bearer"), reply.headers
            assert set(reply.json()) == {"error", "detail"}
    # The refused writes changed nothing.
    assert server.http("GET", "/feeds/t").status == 404 and server.http("GET", "/feeds/existing").status == 200
    assert {f: server.get(f"/feeds/{f}")["version"] for f in versions} == versions
    # A write without a token is refused before its body is even looked at.
    assert server.http("PUT", "/feeds/t", body=b"{not json").status == 401
    # Reads are open.
    for path in ["/healthz", "/metrics", "/feeds", "/feeds/home", "/"]:
        assert server.http("GET", path).status == 200, path
    with SSEClient(server.port, "/feeds/home/events") as client:
        assert client.status == 200
    for method, path, body in WRITES:
        assert 200 <= server.http(method, path, json_body=body, headers=good).status < 300, (method, path)


def test_cors_headers_with_allow_origin(start):
    server = start("--allow-origin", "https://app.example")
    for method, path in [("GET", "/feeds"), ("GET", "/feeds/nope"), ("GET", "/healthz"), ("GET", "/")]:
        reply = server.http(method, path, headers={"Origin": "https://app.example"})
        assert reply.headers["Access-Control-Allow-Origin"] == "https://app.example", (path, reply.headers)
    with SSEClient(server.port, "/feeds/home/events", headers={"Origin": "https://app.example"}) as client:
        assert client.header("Access-Control-Allow-Origin") == "https://app.example"
    reply = server.http("OPTIONS", "/feeds/x", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "PUT"})
    assert reply.status == 204
    assert "PUT" in reply.headers["Access-Control-Allow-Methods"] and "PATCH" in reply.headers["Access-Control-Allow-Methods"]
    allowed = reply.headers["Access-Control-Allow-Headers"].lower()
    assert "last-event-id" in allowed and "authorization" in allowed and "content-type" in allowed and "if-none-match" in allowed
    assert server.http("GET", "/feeds/home", headers={"Origin": "https://app.example"}).headers["Access-Control-Expose-Headers"] == "ETag"
    library = server.http("GET", "/_diffstream/current/diffstream.js", headers={"Origin": "https://app.example"})
    assert library.status == 302 and library.headers["Access-Control-Allow-Origin"] == "*"
    plain = start()
    assert plain.http("GET", "/feeds").headers["Access-Control-Allow-Origin"] is None


@pytest.mark.parametrize("method,path,allow", [
    ("DELETE", "/healthz", {"GET", "HEAD"}), ("POST", "/metrics", {"GET", "HEAD"}), ("PUT", "/feeds", {"GET", "HEAD"}),
    ("PATCH", "/feeds/news", {"GET", "HEAD", "PUT", "DELETE"}), ("POST", "/feeds/news", {"GET", "HEAD", "PUT", "DELETE"}),
    ("PATCH", "/feeds/week", {"GET", "HEAD"}), ("POST", "/feeds/home", {"GET", "HEAD", "PATCH"}),
    ("POST", "/feeds/week/events", {"GET", "HEAD"}), ("GET", "/feeds/blackjack/actions/deal", {"POST"}),
    ("PUT", "/index.html", {"GET", "HEAD"}),
])
def test_known_methods_a_route_does_not_take_are_405_with_allow(shared_server, method, path, allow):
    server = shared_server
    server.put("news", snapshot())
    reply = server.http(method, path, body=b"{}" if method in ("PUT", "POST", "PATCH") else None)
    assert reply.status == 405, reply
    assert {m.strip() for m in reply.headers["Allow"].split(",")} == allow
    assert set(reply.json()) == {"error", "detail"}
    assert server.http("GET", "/feeds/news").status == 200


@pytest.mark.parametrize("method,path", [
    ("PATCH", "/feeds/nothere-404"), ("POST", "/feeds/nothere-404/actions/add"), ("POST", "/feeds/nothere-404"),
    ("DELETE", "/feeds/nothere-404"), ("GET", "/feeds/nothere-404/actions/add"), ("PUT", "/feeds/nothere-404/events"),
])
def test_any_method_on_a_missing_feed_is_404_naming_the_feed(shared_server, method, path):
    """A typo in a feed's name is not a wrong verb: 404 naming the feed, as GET answers, before the
    method or the action is checked."""
    reply = shared_server.http(method, path, body=b"{}" if method in ("PUT", "POST", "PATCH") else None)
    assert reply.status == 404, reply
    assert reply.json() == {"error": "not found", "detail": "no feed named 'nothere-404'"}
    assert reply.headers["Allow"] is None
    assert shared_server.http("GET", "/feeds/nothere-404").status == 404  # nothing was made


def test_a_missing_feed_is_created_by_put_and_then_patch_is_405(server):
    assert server.http("PATCH", "/feeds/later", json_body={}).status == 404
    assert server.http("PUT", "/feeds/later", json_body=snapshot()).status == 201
    reply = server.http("PATCH", "/feeds/later", json_body={})
    assert reply.status == 405 and {m.strip() for m in reply.headers["Allow"].split(",")} == {"GET", "HEAD", "PUT", "DELETE"}
    reply = server.http("POST", "/feeds/later/actions/add", json_body={})
    assert reply.status == 404 and reply.json()["detail"] == "no action 'add' on feed 'later'"
    # A family's member is made on first use: a PATCH to one never used before is not a missing feed.
    reply = server.http("PATCH", "/feeds/home.first-use", json_body={"recommendedHeader": {"title": "Mine", "isFeatured": False}})
    assert reply.status == 200 and reply.json()["feed"] == "home.first-use", reply


def test_unknown_methods_are_501_and_close(server):
    conn = Conn(server.port)
    conn.send(b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    response = conn.read_response()
    assert response.status == 501 and set(response.json()) == {"error", "detail"}
    assert conn.wait_closed(3) and b"HTTP/1.1" not in conn.buffer
    conn.close()


def test_head_has_the_headers_of_get_and_no_body(server):
    conn = Conn(server.port)
    for path in ["/healthz", "/feeds/home", "/feeds", "/metrics", "/", "/nope"]:
        conn.request("GET", path)
        get = conn.read_response()
        conn.request("HEAD", path)
        head = conn.read_response(head=True)
        assert head.status == get.status and head.body == b""
        if path != "/metrics":  # its values move between the two requests
            assert int(head.header("Content-Length")) == len(get.body) > 0, path
        assert head.header("Content-Type") == get.header("Content-Type")
    conn.request("GET", "/healthz")  # nothing of a HEAD body was left on the connection
    assert conn.read_response().body == b'{"status":"ok"}\n'
    conn.close()


def test_keep_alive_serves_many_requests_on_one_connection(server):
    conn = Conn(server.port)
    for n in range(30):
        body = json.dumps(snapshot(("a", [str(i) for i in range(n % 5)]))).encode()
        conn.request("PUT", "/feeds/ka", body=body)
        response = conn.read_response()
        assert response.status in (200, 201) and response.header("Connection") == "keep-alive"
        conn.request("GET", "/feeds/nope")
        assert conn.read_response().status == 404
        conn.request("PUT", "/feeds/ka", body=b"{bad")
        assert conn.read_response().status == 400  # a refused body still keeps the connection
    conn.request("GET", "/healthz", headers={"Connection": "close"})
    response = conn.read_response()
    assert response.status == 200 and response.header("Connection") == "close"
    assert conn.wait_closed(3)
    conn.close()


def test_pipelined_requests_are_answered_in_order(server):
    put_body = json.dumps(snapshot(("a", ["1"]))).encode()
    requests = [b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                b"PUT /feeds/pipe HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(put_body) + put_body,
                b"GET /feeds/pipe HTTP/1.1\r\nHost: x\r\n\r\n",
                b"HEAD /feeds/week HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n",
                b"DELETE /feeds/pipe HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /feeds/pipe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]
    conn = Conn(server.port)
    conn.send(b"".join(requests))  # all in one write
    responses = conn.read_responses(len(requests), head_only=(3,))
    assert [r.status for r in responses] == [200, 201, 200, 200, 404, 204, 404]
    assert responses[0].json() == {"status": "ok"}
    assert responses[2].json()["feed"] == "pipe" and responses[3].body == b""
    assert conn.wait_closed(3)
    conn.close()


def test_http_1_0(server):
    data, closed = raw(server.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b'{"status":"ok"}\n') and closed
    conn = Conn(server.port)
    conn.send(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert conn.read_response().status == 200
    conn.send(b"GET /feeds HTTP/1.0\r\n\r\n")
    assert conn.read_response().status == 200
    assert conn.wait_closed(3)
    conn.close()


def test_chunked_bodies_and_expect_continue(start):
    server = start("--max-body", "100000")
    body = json.dumps(snapshot(("a", ["1", "2"]))).encode()
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    conn = Conn(server.port)
    conn.send(b"PUT /feeds/ch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-Trailer: 1\r\n\r\n")
    assert conn.read_response().status == 201
    conn.request("GET", "/feeds/ch")  # the chunked framing ended exactly where it should
    assert [i["id"] for i in conn.read_response().json()["sections"][0]["items"]] == ["1", "2"]
    # Expect: 100-continue: the interim answer comes before the body is sent.
    conn.send(b"PUT /feeds/ex HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
    assert conn.read_response().status == 100
    conn.send(body)
    assert conn.read_response().status == 201
    # ... and is not sent when the body would be refused anyway.
    conn.send(b"PUT /feeds/ex HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 999999\r\n\r\n")
    assert conn.read_response().status == 413
    assert conn.wait_closed(3)
    conn.close()


def test_json_responses_of_1_kib_or_more_are_gzipped_when_accepted(start):
    server = start()
    plain = server.http("GET", "/feeds/home")
    assert len(plain.body) >= 1024 and plain.headers["Content-Encoding"] is None
    zipped = server.http("GET", "/feeds/home", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and "accept-encoding" in zipped.headers["Vary"].lower()
    assert int(zipped.headers["Content-Length"]) == len(zipped.body) < len(plain.body)
    assert gzip.decompress(zipped.body) == plain.body
    small = server.http("GET", "/healthz", headers={"Accept-Encoding": "gzip"})
    assert small.headers["Content-Encoding"] is None and small.body == b'{"status":"ok"}\n'
    for refused in ["gzip;q=0", "identity", "br", "deflate"]:
        assert server.http("GET", "/feeds/home", headers={"Accept-Encoding": refused}).headers["Content-Encoding"] is None, refused
    for accepted in ["gzip, deflate, br", "*", "GZIP;q=0.5"]:
        assert server.http("GET", "/feeds/home", headers={"Accept-Encoding": accepted}).headers["Content-Encoding"] == "gzip", accepted
    off = start("--compression", "off")
    assert off.http("GET", "/feeds/home", headers={"Accept-Encoding": "gzip"}).headers["Content-Encoding"] is None


def test_ipv6_loopback(start):
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    server = start(host="::1")
    data, closed = raw(server.port, b"GET /healthz HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n", host="::1")
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b'{"status":"ok"}\n') and closed
