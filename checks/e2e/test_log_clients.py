"""The clients of reads through HTTP caches (issue 54, item 2), behind the test's nginx
(deploy/nginx-cache.conf, nginx_helpers.NginxCache): `diffstream watch --poll`, which is the Swift
client's `FeedClient.delivery = .cacheableLog`, follows a public feed through the cache under random
writes, a delete and re-create, and a restart of the origin without --data, and each time ends equal
to the origin's `GET /feeds/F` read directly, not through the cache. nginx's access log shows that it
read the log, never an event stream. (The browser library's transport: checks/browser/test_log_page.py.)"""
import json
import queue
import random
import subprocess
import threading

import pytest

from e2e_helpers import BINARY, clean_environment, wait_until

WATCHER = BINARY.parent / "diffstream-watch"


class Watcher:
    """`diffstream watch --poll --json URL FEED`, its JSON lines read as they come."""

    def __init__(self, url, feed):
        if not WATCHER.exists():
            pytest.fail(f"no {WATCHER}: build it with 'swift build --product diffstream-watch'")
        self.process = subprocess.Popen([str(BINARY), "watch", "--poll", "--json", url, feed], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_environment())
        self.lines = queue.Queue()
        self.last = None
        self.stderr = []
        threading.Thread(target=lambda: [self.lines.put(json.loads(line)) for line in self.process.stdout], daemon=True).start()
        threading.Thread(target=lambda: [self.stderr.append(line) for line in self.process.stderr], daemon=True).start()

    def shows(self, document):
        """True once the latest line is `document` (the origin's GET body: feed, history, version, sections, id)."""
        while not self.lines.empty():
            self.last = self.lines.get()
        return self.last == document

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def scores(rng, version):
    players = rng.sample(range(40), rng.randint(1, 12))
    return {"sections": [{"id": "board", "model": {"round": version}, "items": [
        {"id": f"p{p}", "kind": "player", "model": {"score": rng.randint(0, 99)}} for p in players]}]}


def converges(watcher, server, feed="scores"):
    wait_until(lambda: watcher.shows(server.get(f"/feeds/{feed}")), timeout=30,
               message=f"watch --poll to show the origin's {feed} (last: {watcher.last and watcher.last.get('version')}; {''.join(watcher.stderr[-3:])})")


def test_watch_poll_follows_a_public_feed_through_the_cache(start, nginx):
    rng = random.Random(54)
    server = start()
    cache = nginx(server.port)
    server.put("scores", scores(rng, 0))
    watcher = Watcher(f"http://127.0.0.1:{cache.port}", "scores")
    try:
        converges(watcher, server)
        # Past two chunk boundaries (64 versions each), in bursts the watcher meets live or catching up.
        burst = 0
        while server.get("/feeds/scores")["version"] <= 140:
            for _ in range(rng.randint(5, 40)):
                server.put("scores", scores(rng, burst))
            if burst % 2:
                converges(watcher, server)
            burst += 1
        converges(watcher, server)

        # A new history: deleted and created again.
        assert server.http("DELETE", "/feeds/scores").status == 204
        server.put("scores", scores(rng, 99))
        converges(watcher, server)
    finally:
        watcher.stop()
    log = (cache.directory / "access.log").read_text()
    assert "/feeds/scores/log" in log and "/events" not in log, log[-2000:]


def test_watch_poll_starts_over_after_a_restart_without_data(start, nginx):
    rng = random.Random(5)
    server = start()
    port = server.port
    cache = nginx(port)
    server.put("scores", scores(rng, 0))
    for _ in range(3):
        server.put("scores", scores(rng, 1))
    watcher = Watcher(f"http://127.0.0.1:{cache.port}", "scores")
    try:
        converges(watcher, server)
        server.stop()
        server = start(port=port)  # --data none: the feed's history is gone
        server.put("scores", scores(rng, 2))
        converges(watcher, server)
    finally:
        watcher.stop()
