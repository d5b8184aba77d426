"""The browser library's transport for reads through HTTP caches (issue 54, item 2): the demo page behind
the test's nginx (deploy/nginx-cache.conf), with `?poll=*`, renders a feed and its changes in headless
Chromium from `GET /feeds/F/log` (read through the cache, collapsed there), never an event stream for it,
and ends equal to the origin's `GET /feeds/F` read directly; an origin restarted without its data (a new
history, behind the page's version) makes it start over."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "e2e"))
from harness import Server, wait_for  # noqa: E402
from nginx_helpers import NginxCache  # noqa: E402
from test_page import matches  # noqa: E402


@pytest.fixture
def behind_cache(tmp_path):
    server = Server()
    cache = NginxCache(server.port, tmp_path / "nginx")
    yield server, cache
    cache.stop()
    server.stop()


def shows(driver, server, feed):
    document = server.request("GET", f"/feeds/{feed}")
    wait_for(lambda: matches(driver, document), message=f"{feed} version {document['version']} through the cache")


def test_the_demo_follows_a_feed_through_the_cache(browser, behind_cache):
    server, cache = behind_cache
    browser.get(f"http://127.0.0.1:{cache.port}/?feed=todo&poll=*")
    shows(browser, server, "todo")
    for n in range(70):  # past a chunk's end: a page that falls behind reads whole chunks
        server.request("POST", "/feeds/todo/actions/add", {"title": f"task {n}"})
        if n % 20 == 0:
            shows(browser, server, "todo")
    shows(browser, server, "todo")
    server.request("POST", "/feeds/todo/actions/clearDone", {})
    server.request("POST", "/feeds/todo/actions/toggle", {"id": "t3"})
    shows(browser, server, "todo")
    log = (cache.directory / "access.log").read_text()
    assert "/feeds/todo/log?after=" in log and "live=1" in log, log[-2000:]
    assert "/events" not in log, [line for line in log.splitlines() if "/events" in line][:3]


def test_a_page_starts_over_when_the_origin_restarts_without_its_data(browser, tmp_path):
    server = Server()
    port = server.port
    cache = NginxCache(port, tmp_path / "nginx")
    try:
        for title in ("One", "Two", "Three"):
            server.request("PUT", "/feeds/board", {"sections": [{"id": "s", "items": [{"id": "a", "kind": "card", "model": {"title": title}}]}]})
        browser.get(f"http://127.0.0.1:{cache.port}/?feed=board&poll=board")
        shows(browser, server, "board")
        server.stop()
        server = Server(port=port)  # --data none: a new history, whose version 1 is behind the page's 3
        server.request("PUT", "/feeds/board", {"sections": [{"id": "s", "items": [{"id": "b", "kind": "card", "model": {"title": "Four"}}]}]})
        shows(browser, server, "board")
    finally:
        cache.stop()
        server.stop()
