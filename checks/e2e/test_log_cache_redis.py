"""Reads through HTTP caches with --redis (issue 54): a position from before a FLUSHALL, read through
nginx's cache (deploy/nginx-cache.conf), starts over cleanly, and a feed followed only by live log reads
is not dropped as idle. Its own redis-server (redis_helpers), so it runs once, in the in-memory pass."""
import asyncio

from e2e_helpers import normalised, wait_until
from redis_helpers import cluster, redis, require_redis  # noqa: F401 (fixtures)
from test_log_cache import PLAIN, document, get, start_over_through


def test_a_position_from_before_flushall_starts_over_through_the_cache(cluster, nginx):
    (a,) = cluster.launch(1, *PLAIN)
    for n in range(1, 4):
        a.put("score", document(n))
    cache = nginx(a.port)
    status, headers, answer = get(cache.port, "/feeds/score/log")
    assert status == 200 and answer["snapshot"]["version"] == 3
    old = answer["history"]

    # A live read waits at the head, as the feed's only follower; then a batch comes to it.
    async def live_then_write():
        loop = asyncio.get_running_loop()
        waiting = loop.run_in_executor(None, get, cache.port, f"/feeds/score/log?after={answer['next']}&live=1&cursor=1")
        await loop.run_in_executor(None, lambda: wait_until(lambda: a.metrics().get('diffstream_feed_subscribers{feed="score"}') == 1,
                                                             message="the live read to wait"))
        a.put("score", document(4))
        return await waiting
    status, _, live = asyncio.run(live_then_write())
    assert status == 200 and [b["version"] for b in live["batches"]] == [4]

    cluster.redis.command("FLUSHALL")
    wait_until(lambda: get(a.port, "/feeds/score")[0] == 404, message="the instance to see the flush")
    a.put("score", document(2))
    new = a.get("/feeds/score")["history"]
    assert new != old
    fresh = start_over_through(cache, "score", live["next"], new)
    assert normalised(fresh["snapshot"]) == normalised(a.get("/feeds/score"))
