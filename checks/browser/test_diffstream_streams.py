"""Public/diffstream-streams.js in Chromium against the scripted multi-feed server (multifeed_server.py):
many feeds on ONE event stream for the whole browser, in each mode ('worker', 'tab', 'own'); a tab that
adds or drops a feed reconnects with every other feed's position (no resync); a feed created late is
retried; a server on another origin forces 'own'; and 12 feeds in two tabs on one stream of the real binary."""
import pathlib
import random
import re
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import Server, wait_for  # noqa: E402
from multifeed_server import MultiFeedServer  # noqa: E402
from test_tabs import Tabs  # noqa: E402


@pytest.fixture(autouse=True)
def drained_console(browser):
    """Checks that these pages logged no errors, and leaves the shared browser's console clean for the
    next test (test_page checks there are none)."""
    yield
    browser.get("about:blank")
    # Not errors of the pages: the favicon the scripted server lacks, and a reconnect after the test's server stopped.
    ignored = ("favicon.ico", "ERR_CONNECTION_REFUSED")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and not any(i in e["message"] for i in ignored)]
    assert errors == []


@pytest.fixture
def tabs(browser):
    t = Tabs(browser)
    yield t
    t.cleanup()


@pytest.fixture
def server():
    s = MultiFeedServer(feeds=("a", "b", "c", "d"))
    yield s
    s.stop()


def open_page(tabs, server, feeds, mode, base=None):
    if tabs.handles:
        tabs.driver.switch_to.new_window("tab")
    query = f"feeds={','.join(feeds)}&mode={mode}" + (f"&base={base}" if base else "")
    tabs.driver.get(f"{server.url}/streams.html?{query}")
    handle = tabs.driver.current_window_handle
    tabs.handles.append((handle, None))
    wait_for(lambda: tabs.run(handle, "return window.ready === true"), message="the test page to load")
    return handle


def current(tabs, handle, server, feeds):
    versions = tabs.run(handle, "return versions()")
    return all(versions.get(f) == server.feeds[f]["version"] for f in feeds)


def no_resync(tabs, handle):
    log = tabs.run(handle, "return log")
    assert not [e for e in log if e["type"] == "resync"], log
    return log


@pytest.mark.parametrize("mode", ["worker", "tab", "own"])
def test_many_feeds_on_one_stream_and_a_feed_added_without_resyncing_the_others(tabs, server, mode):
    first = open_page(tabs, server, ["a", "b", "c"], mode)
    wait_for(lambda: current(tabs, first, server, "abc"), message="three feeds live")
    assert tabs.run(first, "return streams.mode") == mode
    assert [sorted(r) for r in server.requests] == [["a", "b", "c"]], "the feeds subscribed to at once open one stream"
    for feed in "abc":
        server.write(feed)
    wait_for(lambda: current(tabs, first, server, "abc"), message="the writes to arrive")
    second = open_page(tabs, server, ["c", "d"], mode)
    wait_for(lambda: current(tabs, second, server, "cd") and current(tabs, first, server, "abc"), message="the second tab live")
    wait_for(lambda: server.open_streams() == (2 if mode == "own" else 1), message="one stream for the browser")
    if mode != "own":
        # The stream was reopened for d, with the position of every feed it carried.
        last = server.requests[-1]
        assert sorted(p.split("@")[0] for p in last) == ["a", "b", "c", "d"], last
        assert all("@" in p for p in last if not p.startswith("d")), last
    for feed in "abcd":
        server.write(feed)
    wait_for(lambda: current(tabs, first, server, "abc") and current(tabs, second, server, "cd"), message="both tabs to follow")
    tabs.run(first, "drop('a')")
    server.write("b")
    wait_for(lambda: current(tabs, first, server, "bc"), message="the feeds left to follow")
    for handle in (first, second):
        log = no_resync(tabs, handle)
        snapshots = [e["feed"] for e in log if e["type"] == "snapshot"]
        assert len(snapshots) == len(set(snapshots)), f"a feed got a second snapshot: {log}"


def test_a_feed_created_late_is_retried(tabs, server):
    handle = open_page(tabs, server, ["a", "late"], "own")
    wait_for(lambda: any(e["type"] == "notfound" for e in tabs.run(handle, "return log")), message="notfound for late")
    server.create("late")
    wait_for(lambda: tabs.run(handle, "return versions()").get("late") == 1, timeout=20, message="late to be retried")
    assert current(tabs, handle, server, "a")
    no_resync(tabs, handle)


def test_a_server_on_another_origin_gets_its_own_stream(tabs, server):
    other = MultiFeedServer(feeds=("x",), allow_origin="*")
    try:
        base = other.url.replace("127.0.0.1", "localhost")
        handle = open_page(tabs, server, ["x"], "worker", base=base)
        wait_for(lambda: tabs.run(handle, "return versions()").get("x") == 1, message="the other origin's feed")
        assert tabs.run(handle, "return streams.mode") == "own"
        other.write("x")
        wait_for(lambda: tabs.run(handle, "return versions()").get("x") == 2, message="a write on the other origin")
    finally:
        other.stop()


def one_chain_per_feed(events, feeds, server):
    """Each feed: one snapshot, then batches that each follow the last (none lost, none twice), to the server's version."""
    for feed in feeds:
        chain = [e for e in events if e["feed"] == feed]
        assert chain and chain[0]["event"] == "snapshot", chain
        version = chain[0]["version"]
        for event in chain[1:]:
            assert event["event"] == "batch" and event["from"] == version and event["version"] == version + 1, chain
            version = event["version"]
        assert version == server.feeds[feed]["version"], chain


@pytest.mark.parametrize("mode", ["worker", "tab"])
def test_the_holder_goes_away_with_many_feeds_and_another_takes_over(tabs, server, mode):
    handles = [open_page(tabs, server, ["a", "b", "c"], mode) for _ in range(3)]
    wait_for(lambda: all(current(tabs, h, server, "abc") for h in handles), message="three tabs live")
    for _ in range(3):
        for feed in "abc":
            server.write(feed)
    if mode == "worker":
        tabs.run(handles[0], "streams.exitWorker()")
        survivors = handles
    else:
        leader = next(h for h in handles if tabs.run(h, "return streams.leading"))
        tabs.close(leader)
        survivors = [h for h in handles if h != leader]
    for _ in range(3):
        for feed in "abc":
            server.write(feed)
    wait_for(lambda: all(current(tabs, h, server, "abc") for h in survivors), message="the tabs to follow the new holder")
    wait_for(lambda: server.open_streams() == 1, message="one stream again")
    for handle in survivors:
        no_resync(tabs, handle)
        one_chain_per_feed(tabs.run(handle, "return streams.delivered"), "abc", server)


@pytest.fixture
def real_server(tmp_path):
    """The diffstream binary serving Public/ plus the test page (a copy of both in tmp_path)."""
    public = tmp_path / "public"
    shutil.copytree(pathlib.Path(__file__).resolve().parents[2] / "Public", public)
    shutil.copy(pathlib.Path(__file__).resolve().parent / "pages" / "streams.html", public / "streams.html")
    s = Server(public=public)
    yield s
    s.stop()


def event_streams(server):
    status, _, text = server.call("GET", "/metrics")
    assert status == 200
    text = text.decode() if isinstance(text, bytes) else str(text)
    return int(float(re.search(r"^diffstream_event_streams_open (\S+)$", text, re.M).group(1)))


@pytest.mark.parametrize("mode", ["worker", "tab"])
def test_twelve_feeds_in_two_tabs_on_one_stream_of_the_real_server(tabs, real_server, mode):
    feeds = [f"f{i}" for i in range(12)]

    def put(feed, n):
        real_server.request("PUT", f"/feeds/{feed}", {"sections": [{"id": "s", "items": [
            {"id": f"{feed}-{i}", "kind": "card", "model": {"n": n}} for i in range(n % 3, n % 3 + 3)]}]})

    for feed in feeds:
        put(feed, 0)
    first = open_page(tabs, real_server, feeds[:8], mode)
    second = open_page(tabs, real_server, feeds[4:], mode)

    def converged():
        versions = {f: real_server.request("GET", f"/feeds/{f}")["version"] for f in feeds}
        return all(tabs.run(h, "return versions()") == {f: versions[f] for f in fs} for h, fs in ((first, feeds[:8]), (second, feeds[4:])))

    wait_for(converged, message="both tabs live")
    rng = random.Random(24)
    for n in range(1, 41):
        put(rng.choice(feeds), n)
    wait_for(converged, message="both tabs to follow 40 random writes")
    wait_for(lambda: event_streams(real_server) == 1, message="one event stream for the whole browser")
    for handle in (first, second):
        no_resync(tabs, handle)
