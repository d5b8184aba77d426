"""`GET /feeds/{feed}` carries its position (issue 37): `history` and the event id in the body, the id as a
strong `ETag` (another for the gzipped body), `If-None-Match` answered `304`, and a client following the
feed from the id the read gave gets only the batches after it."""
import gzip
import json
import re

import pytest

from e2e_helpers import SSEClient, snapshot


def big_document(tag):
    """A snapshot whose JSON is well over the 1 KiB the server starts compressing at."""
    return {"sections": [{"id": "s", "model": None, "items": [
        {"id": f"i{n}", "kind": "row", "model": {"title": f"Item {n} {tag}", "text": "x" * 40}} for n in range(40)]}]}


def test_a_read_names_its_position_in_the_body_and_the_etag(server):
    server.put("news", snapshot(("top", ["a", "b"])))
    reply = server.http("GET", "/feeds/news")
    assert reply.status == 200
    body = reply.json()
    assert list(body) == ["feed", "history", "version", "sections", "id"]
    assert re.fullmatch(r"[0-9a-f]{16}", body["history"]) and body["version"] == 1
    assert body["id"] == f"ds1.{body['history']}.1"
    assert reply.headers["ETag"] == f'"{body["id"]}"'
    assert reply.headers["Cache-Control"] == "no-cache"
    head = server.http("HEAD", "/feeds/news")
    assert head.status == 200 and head.headers["ETag"] == reply.headers["ETag"] and head.body == b""


@pytest.mark.parametrize("condition, status", [
    ("{tag}", 304), ("W/{tag}", 304), ('"other", {tag}', 304), ("*", 304), ('"other"', 200), ('"ds1.0123456789abcdef.1"', 200),
])
def test_if_none_match_is_answered_304_while_the_feed_is_where_the_tag_says(server, condition, status):
    server.put("cond", snapshot(("s", ["a"])))
    tag = server.http("GET", "/feeds/cond").headers["ETag"]
    reply = server.http("GET", "/feeds/cond", headers={"If-None-Match": condition.format(tag=tag)})
    assert reply.status == status, reply
    if status == 304:
        assert reply.body == b"" and reply.headers["ETag"] == tag
    else:
        assert reply.json()["version"] == 1


def test_a_write_moves_the_tag_and_the_old_one_gets_the_new_document(server):
    server.put("moving", snapshot(("s", ["a"])))
    old = server.http("GET", "/feeds/moving").headers["ETag"]
    server.put("moving", snapshot(("s", ["a", "b"])))
    reply = server.http("GET", "/feeds/moving", headers={"If-None-Match": old})
    assert reply.status == 200 and reply.json()["version"] == 2
    assert reply.headers["ETag"] != old and reply.headers["ETag"] == f'"{reply.json()["id"]}"'


def test_the_gzipped_body_has_its_own_tag(server):
    server.put("big", big_document("one"))
    plain = server.http("GET", "/feeds/big")
    zipped = server.http("GET", "/feeds/big", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in zipped.headers["Vary"]
    assert json.loads(gzip.decompress(zipped.body)) == plain.json()
    assert zipped.headers["ETag"] == plain.headers["ETag"][:-1] + '-gz"'
    again = server.http("GET", "/feeds/big", headers={"Accept-Encoding": "gzip", "If-None-Match": zipped.headers["ETag"]})
    assert again.status == 304 and again.headers["ETag"] == zipped.headers["ETag"]


def test_a_client_follows_from_the_position_a_read_gave(server):
    server.put("follow", snapshot(("s", ["a"])))
    read = server.get("/feeds/follow")
    server.put("follow", snapshot(("s", ["a", "b"])))
    server.put("follow", snapshot(("s", ["b"])))
    for headers, path in [({"Last-Event-ID": read["id"]}, "/feeds/follow/events"), ({}, f"/feeds/follow/events?lastEventId={read['id']}")]:
        with SSEClient(server.port, path, headers=headers) as client:
            _, first = client.expect_event("batch")
            _, second = client.expect_event("batch")
            assert (first["from"], first["version"], second["version"]) == (1, 2, 3)
            assert first["history"] == read["history"]


def test_a_missing_feed_is_404_whatever_the_condition(server):
    assert server.http("GET", "/feeds/never", headers={"If-None-Match": "*"}).status == 404
