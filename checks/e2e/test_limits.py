"""Bounded storage and no open writes on a public address (issue 15)."""
import json

import pytest

from e2e_helpers import JWT_SECRET, Conn, jwt_token, rights, snapshot

# The server's own view-model feeds (home, week, blackjack, forecast, todo) do not count against
# --max-feeds: it bounds the feeds clients create. Their bytes count against --max-store-bytes.


def doc(n_items, text="x" * 40, prefix="i"):
    """A snapshot of one section with `n_items` cards whose titles hold `text`."""
    return {"sections": [{"id": "s", "model": None, "items": [
        {"id": f"{prefix}{i}", "kind": "card", "model": {"title": f"{text} {i}"}} for i in range(n_items)]}]}


def assert_507(reply, limit, value):
    assert reply.status == 507, reply
    body = reply.json()
    assert body["error"] == "insufficient storage" and body["limit"] == limit and body["value"] == value, body
    assert f"--{limit} {value}" in body["detail"], body


def test_max_feeds_refuses_the_next_feed_and_deleting_makes_room(start):
    server = start("--max-feeds", 3)
    for n in range(3):
        server.put(f"f{n}", doc(2))
    before = {f"f{n}": server.get(f"/feeds/f{n}") for n in range(3)}
    assert_507(server.http("PUT", "/feeds/f3", json_body=doc(2)), "max-feeds", 3)
    assert server.http("GET", "/feeds/f3").status == 404
    assert {f"f{n}": server.get(f"/feeds/f{n}") for n in range(3)} == before
    # Replacing an existing feed is not a new feed.
    assert server.http("PUT", "/feeds/f0", json_body=doc(3)).status == 200
    assert server.http("DELETE", "/feeds/f1").status == 204
    assert server.http("PUT", "/feeds/f3", json_body=doc(2)).status == 201
    metrics = server.metrics()
    assert metrics["diffstream_feeds"] == 3
    assert metrics["diffstream_max_feeds"] == 3
    assert server.http("GET", "/feeds/home").status == 200, "the view models still work at the limit"
    assert metrics['diffstream_storage_refusals_total{limit="max-feeds"}'] == 1


def test_max_feed_bytes_refuses_a_bigger_snapshot_and_keeps_the_feed(start):
    server = start("--max-feed-bytes", 4096)
    server.put("small", doc(10))
    before = server.get("/feeds/small")
    big = doc(100)
    assert len(json.dumps(big)) > 4096
    assert_507(server.http("PUT", "/feeds/small", json_body=big), "max-feed-bytes", 4096)
    assert_507(server.http("PUT", "/feeds/new", json_body=big), "max-feed-bytes", 4096)
    assert server.get("/feeds/small") == before
    assert server.http("GET", "/feeds/new").status == 404
    assert server.http("PUT", "/feeds/small", json_body=doc(20)).status == 200
    assert server.metrics()['diffstream_storage_refusals_total{limit="max-feed-bytes"}'] == 2


def test_max_store_bytes_counts_snapshots_and_replay_and_deleting_makes_room(start):
    limit = 200_000
    server = start("--max-store-bytes", limit, "--max-feed-bytes", 100_000)
    created = []
    while True:
        name = f"fill{len(created)}"
        reply = server.http("PUT", f"/feeds/{name}", json_body=doc(150, prefix=name))
        if reply.status != 201:
            assert_507(reply, "max-store-bytes", limit)
            break
        created.append(name)
        assert len(created) < 100, "the store never filled"
    assert len(created) >= 5
    used = server.metrics()["diffstream_store_bytes"]
    assert used <= limit
    before = {name: server.get(f"/feeds/{name}") for name in created}
    # A change whose batch would not fit is refused too, and changes nothing.
    grown = server.http("PUT", f"/feeds/{created[0]}", json_body=doc(150, text="y" * 200, prefix=created[0]))
    assert_507(grown, "max-store-bytes", limit)
    assert {name: server.get(f"/feeds/{name}") for name in created} == before
    assert server.metrics()["diffstream_store_bytes"] == used
    # Deleting makes room again.
    assert server.http("DELETE", f"/feeds/{created[1]}").status == 204
    assert server.metrics()["diffstream_store_bytes"] < used
    assert server.http("PUT", "/feeds/again", json_body=doc(150, prefix="again")).status == 201
    assert server.http("GET", "/healthz").status == 200


def test_memory_stays_bounded_while_flooded_with_creates(start):
    """1,200 creates of ~50 KB snapshots (60 MB encoded) against a 12 MB store: the growth of the
    server's RSS stays under 6 times the store limit (the parsed snapshots, the allocator's slack)."""
    limit = 12 << 20
    server = start("--max-store-bytes", limit, "--replay", "16")
    baseline = server.rss_kib()
    body = json.dumps(doc(400, text="z" * 80)).encode()
    assert 45_000 < len(body) < 60_000
    conn = Conn(server.port, timeout=30)
    statuses = {}
    peak = 0
    for n in range(1200):
        conn.request("PUT", f"/feeds/flood-{n}", body=body, headers={"Content-Type": "application/json"})
        reply = conn.read_response()
        statuses[reply.status] = statuses.get(reply.status, 0) + 1
        if n % 100 == 0:
            peak = max(peak, server.rss_kib())
    conn.close()
    peak = max(peak, server.rss_kib())
    assert statuses.get(201, 0) > 100 and statuses.get(507, 0) > 800, statuses
    assert set(statuses) == {201, 507}, statuses
    growth_mib = (peak - baseline) / 1024
    print(f"RSS baseline {baseline / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB, growth {growth_mib:.0f} MiB; {statuses}")
    assert growth_mib < 6 * (limit >> 20), f"RSS grew by {growth_mib:.0f} MiB"
    assert server.metrics()["diffstream_store_bytes"] <= limit


# ----------------------------------------------------------------------------------------------------
# A public address without a write credential


def public(start, *flags, env=None):
    server = start(*flags, host="0.0.0.0", env=env)
    server.host = "127.0.0.1"  # connect over loopback to the server bound to every address
    return server


WARNING = r"warning .*bound to the public address 0\.0\.0\.0 without a write credential"


def test_writes_are_refused_with_a_hint_on_a_public_address_without_a_credential(start):
    server = public(start)
    server.wait_log(WARNING)
    assert server.log_text().count("without a write credential") == 1
    for method, path, body in [("PUT", "/feeds/news", snapshot()), ("DELETE", "/feeds/news", None),
                               ("PATCH", "/feeds/home", {"banner": None}), ("DELETE", "/feeds/home", None)]:
        reply = server.http(method, path, json_body=body)
        assert reply.status == 403, (method, path, reply)
        detail = reply.json()["detail"]
        assert "--token" in detail and "--open-writes" in detail, detail
    assert server.http("GET", "/feeds/news").status == 404
    # Reads and the examples' public actions still work.
    version = server.get("/feeds/blackjack")["version"]
    assert server.ok("POST", "/feeds/blackjack/actions/deal")["version"] == version + 1
    assert server.ok("POST", "/feeds/forecast/actions/select", {"day": "d-tue"})["feed"] == "forecast"
    assert server.http("GET", "/feeds").status == 200


def test_open_writes_allows_writes_on_a_public_address(start):
    server = public(start, "--open-writes")
    assert server.http("PUT", "/feeds/news", json_body=snapshot()).status == 201
    assert server.http("PATCH", "/feeds/home", json_body={"banner": None}).status == 200
    assert server.http("DELETE", "/feeds/news").status == 204
    assert "without a write credential" not in server.log_text()


@pytest.mark.parametrize("how", ["token", "jwt"])
def test_a_credential_allows_writes_with_it_on_a_public_address(start, how):
    if how == "token":
        server = public(start, "--token", "public-admin-token")
        good = {"Authorization": "Bearer public-admin-token"}
    else:
        server = public(start, env={"DIFFSTREAM_JWT_SECRET": JWT_SECRET})
        good = {"Authorization": "Bearer " + jwt_token(rights(publish=["news", "blackjack"]))}
    assert server.http("PUT", "/feeds/news", json_body=snapshot()).status == 401
    assert server.http("PUT", "/feeds/news", json_body=snapshot(), headers=good).status == 201
    assert server.http("DELETE", "/feeds/news", headers=good).status == 204
    # Once a credential is configured, actions (public ones too) need it like any write (issue 13).
    assert server.http("POST", "/feeds/blackjack/actions/deal").status == 401
    assert server.ok("POST", "/feeds/blackjack/actions/deal", headers=good)["feed"] == "blackjack"
    assert "without a write credential" not in server.log_text()


def test_loopback_keeps_open_writes(server):
    assert server.http("PUT", "/feeds/news", json_body=snapshot()).status == 201
    assert server.http("DELETE", "/feeds/news").status == 204
    assert "without a write credential" not in server.log_text()


def test_limits_hold_across_a_restart_with_the_durable_store(start, tmp_path):
    """Restored feeds count (the restored view-model feeds do not, once hosted again): after a restart
    the same limit refuses the same write, and a refused write was never stored."""
    data = tmp_path / "data"
    first = start("--data", data, "--max-feeds", 2, "--max-feed-bytes", 4096)
    first.put("kept-1", doc(2))
    first.put("kept-2", doc(2))
    assert_507(first.http("PUT", "/feeds/refused", json_body=doc(2)), "max-feeds", 2)
    assert_507(first.http("PUT", "/feeds/kept-1", json_body=doc(100)), "max-feed-bytes", 4096)
    stored = first.metrics()["diffstream_store_bytes"]
    first.stop()
    second = start("--data", data, "--max-feeds", 2, "--max-feed-bytes", 4096)
    metrics = second.metrics()
    assert metrics["diffstream_feeds"] == 2
    assert metrics["diffstream_store_bytes"] == stored
    assert second.http("GET", "/feeds/refused").status == 404
    assert second.get("/feeds/kept-1")["version"] == 1
    assert_507(second.http("PUT", "/feeds/refused", json_body=doc(2)), "max-feeds", 2)
    assert second.http("DELETE", "/feeds/kept-2").status == 204
    assert second.http("PUT", "/feeds/refused", json_body=doc(2)).status == 201
