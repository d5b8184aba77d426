"""Many tabs, one connection (issues 14 and 24): the tabs of one browser share one event stream for all their feeds.

Each test runs the SharedWorker path ('worker') and the elected-tab fallback ('tab', BroadcastChannel and
Web Locks), picked with the page's `?streams=` flag; 'own' (a stream per tab) is the last resort.
"""
import pathlib
import re
import sys
import threading

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import Server, free_port, wait_for  # noqa: E402
from test_page import dom, matches, media  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402

MODES = ["worker", "tab"]


class Tabs:
    """Tabs of the one session browser; closes the ones it opened and goes back to the first."""

    def __init__(self, driver):
        self.driver = driver
        self.first = driver.current_window_handle
        self.handles = []  # (handle, feed)

    def open(self, server, feed, mode):
        if self.handles:
            self.driver.switch_to.new_window("tab")
        self.driver.get(f"{server.url}/?feed={feed}&streams={mode}")
        self.handles.append((self.driver.current_window_handle, feed))
        return self.driver.current_window_handle

    def run(self, handle, script):
        self.driver.switch_to.window(handle)
        return self.driver.execute_script(script)

    def close(self, handle):
        self.driver.switch_to.window(handle)
        self.driver.close()
        self.handles = [(h, f) for h, f in self.handles if h != handle]
        self.driver.switch_to.window(self.handles[0][0] if self.handles else self.first)

    def converged(self, server):
        """Every tab shows exactly what the server holds for its feed."""
        documents = {feed: server.request("GET", f"/feeds/{feed}") for feed in {f for _, f in self.handles}}
        for handle, feed in self.handles:
            self.driver.switch_to.window(handle)
            if not matches(self.driver, documents[feed]) or dom(self.driver)["state"] not in ("live", "resynced"):
                return False
        return True

    def cleanup(self):
        """Leaves one window (the first, unless a test closed it) on a blank page."""
        handles = self.driver.window_handles
        keep = self.first if self.first in handles else handles[0]
        for handle in handles:
            if handle != keep:
                self.driver.switch_to.window(handle)
                self.driver.close()
        self.driver.switch_to.window(keep)
        self.driver.get("about:blank")


@pytest.fixture
def tabs(browser):
    t = Tabs(browser)
    yield t
    t.cleanup()


def subscribers(server):
    """Open event streams per feed (the feeds that have any), from /metrics."""
    status, _, text = server.call("GET", "/metrics")
    assert status == 200
    text = text.decode() if isinstance(text, bytes) else str(text)
    found = {m[1]: int(m[2]) for m in re.finditer(r'diffstream_feed_subscribers\{feed="([^"]+)"\} (\d+)', text)}
    return {feed: count for feed, count in found.items() if count}


def stream_connects(server):
    """The event streams the server opened (the page's hub holds one multi-feed stream, `/events?feed=…`)."""
    return [line for line in server.log if re.search(r"sse connect .*/events", line)]


def delivered(tabs, handle, feed):
    return [e for e in tabs.run(handle, "return diffstreamStreams.delivered") if e["feed"] == feed]


def assert_one_chain(events, final):
    """One snapshot, then batches that each follow the last: none lost, none applied twice."""
    assert events[0]["event"] == "snapshot", events
    version = events[0]["version"]
    for event in events[1:]:
        assert event["event"] == "batch" and event["from"] == version and event["version"] == version + 1, events
        version = event["version"]
    assert version == final, events


def put_news(server, n):
    return server.request("PUT", "/feeds/news", {"sections": [{"id": "top", "model": {"title": f"Top {n}"}, "items": [
        {"id": f"n{i}", "kind": "banner", "model": {"title": f"Story {i} of round {n}"}} for i in range(n % 4, n % 4 + 3)]}]})


@pytest.mark.parametrize("mode", MODES)
def test_ten_tabs_on_two_feeds_share_one_stream_per_feed(tabs, server, mode):
    put_news(server, 0)
    handles = [tabs.open(server, "news" if i % 2 else "blackjack", mode) for i in range(10)]
    wait_for(lambda: tabs.converged(server), timeout=30, message="all ten tabs to be live")
    assert tabs.driver.execute_script("return diffstreamStreams.mode") == mode
    assert subscribers(server) == {"news": 1, "blackjack": 1}
    for n in range(1, 4):
        put_news(server, n)
        # The deal comes from a tab: a write is not queued behind the streams.
        tabs.run(handles[2 * n], "document.querySelector(\"#actions form[data-action='deal'] .action-button\").click()")
        wait_for(lambda: server.request("GET", "/feeds/blackjack")["version"] >= n + 1, message="the deal from a tab")
        wait_for(lambda: tabs.converged(server), message=f"all tabs to converge after round {n}")
    for handle, feed in tabs.handles:
        assert_one_chain(delivered(tabs, handle, feed), server.request("GET", f"/feeds/{feed}")["version"])
    assert subscribers(server) == {"news": 1, "blackjack": 1}


@pytest.mark.parametrize("mode", MODES)
def test_a_feed_nobody_shows_has_its_stream_closed(tabs, server, mode):
    first = tabs.open(server, "week", mode)
    tabs.open(server, "forecast", mode)
    last = tabs.open(server, "home", mode)
    wait_for(lambda: tabs.converged(server), message="three tabs live")
    assert subscribers(server) == {"week": 1, "forecast": 1, "home": 1}
    tabs.run(first, "const p = document.getElementById('feed-picker'); p.value = 'forecast'; p.dispatchEvent(new Event('change'))")
    wait_for(lambda: "week" not in subscribers(server), message="the week stream to close")
    tabs.close(last)  # the hub learns that the tab is gone
    wait_for(lambda: subscribers(server) == {"forecast": 1}, message="the home stream to close")


class Writer:
    """PATCHes the home feed's banner over and over from a thread until stopped."""

    def __init__(self, server):
        self.server, self.stopped, self.count = server, threading.Event(), 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopped.is_set():
            self.server.request("PATCH", "/feeds/home", {"banner": {"id": "b", "title": f"Write {self.count}"}})
            self.count += 1
            self.stopped.wait(0.02)  # pacing only: the test waits for versions, not for time

    def stop(self):
        self.stopped.set()
        self.thread.join()


@pytest.mark.parametrize("mode", MODES)
def test_the_holder_goes_away_and_another_takes_over(tabs, server, mode):
    handles = [tabs.open(server, "home", mode) for _ in range(4)]
    wait_for(lambda: tabs.converged(server), message="four tabs live")
    writer = Writer(server)
    try:
        start = server.request("GET", "/feeds/home")["version"]
        wait_for(lambda: all(int(tabs.run(h, "return diffstream.version")) >= start + 5 for h in handles),
                 message="batches flowing to every tab")
        if mode == "worker":
            tabs.run(handles[0], "diffstreamStreams.exitWorker()")  # as if the worker crashed
            survivors = handles
        else:
            leader = next(h for h in handles if tabs.run(h, "return diffstreamStreams.leading"))
            tabs.close(leader)
            survivors = [h for h in handles if h != leader]
        closed_at = server.request("GET", "/feeds/home")["version"]
        wait_for(lambda: all(int(tabs.run(h, "return diffstream.version")) >= closed_at + 10 for h in survivors),
                 message="the other tabs to follow the writes after the holder went away")
    finally:
        writer.stop()
    wait_for(lambda: tabs.converged(server), message="the tabs to converge")
    final = server.request("GET", "/feeds/home")["version"]
    for handle in survivors:
        assert_one_chain(delivered(tabs, handle, "home"), final)
    # The new holder opened one stream and resumed from the last event id (the chains above hold no
    # second snapshot, which a fresh subscription would have started with).
    wait_for(lambda: subscribers(server) == {"home": 1}, message="one stream for home again")
    assert len(stream_connects(server)) == 2


@pytest.mark.parametrize("store", [False, True], ids=["in-memory", "durable"])
@pytest.mark.parametrize("mode", MODES)
def test_restart_with_tabs_open_all_resume(tabs, mode, store, tmp_path):
    port = free_port()
    data = ["--data", str(tmp_path)] if store else []
    first = Server(port=port, extra=data)
    try:
        for _ in range(3):
            tabs.open(first, "home", mode)
        wait_for(lambda: tabs.converged(first), message="three tabs live")
    finally:
        first.stop()
    wait_for(lambda: all(tabs.run(h, "return diffstream.state") == "reconnecting" for h, _ in tabs.handles),
             message="every tab to show reconnecting")
    second = Server(port=port, extra=data)
    try:
        second.request("PATCH", "/feeds/home", {"banner": None})
        wait_for(lambda: tabs.converged(second), timeout=20, message="every tab to converge after the restart")
        connects = stream_connects(second)
        assert len(connects) == 1, connects
        assert subscribers(second) == {"home": 1}
        if store:  # the same history: the stream resumed with the batches missed, no second snapshot
            final = second.request("GET", "/feeds/home")["version"]
            for handle, _ in tabs.handles:
                assert_one_chain(delivered(tabs, handle, "home"), final)
    finally:
        second.stop()


@pytest.mark.parametrize("mode", MODES)
def test_typing_survives_batches_from_the_shared_stream(tabs, server, mode):
    typing = tabs.open(server, "home", mode)
    tabs.open(server, "home", mode)
    wait_for(lambda: tabs.converged(server), message="two tabs live")
    selector = "li[data-item-id='suggested-m1'] input.note"
    tabs.run(typing, f"""
        const input = document.querySelector("{selector}");
        input.focus(); input.value = 'half-typed'; input.setSelectionRange(3, 7);""")
    for n in range(3):
        server.request("PATCH", "/feeds/home", {"suggested": [media("m1", f"Northern lights {n}"), media(f"x{n}", "Another")]})
        wait_for(lambda: tabs.converged(server), message=f"the tabs to converge after patch {n}")
    state = tabs.run(typing, f"""
        const input = document.querySelector("{selector}");
        return {{value: input.value, focused: document.activeElement === input, start: input.selectionStart, end: input.selectionEnd}};""")
    assert state == {"value": "half-typed", "focused": True, "start": 3, "end": 7}


def test_a_lone_tab_holds_its_own_stream(tabs, server):
    tabs.open(server, "home", "own")
    wait_for(lambda: tabs.converged(server), message="the tab to be live")
    assert tabs.driver.execute_script("return [diffstreamStreams.mode, diffstreamStreams.leading]") == ["own", True]
    server.request("PATCH", "/feeds/home", {"banner": None})
    wait_for(lambda: tabs.converged(server), message="the tab to converge")


def test_a_worker_that_does_not_load_falls_back_to_an_elected_tab(tabs):
    server = ScriptedServer(without_token=None, missing=["stream-worker.js"])
    try:
        first = tabs.open(server, "home", "worker")
        second = tabs.open(server, "home", "worker")
        for handle in (first, second):
            wait_for(lambda: tabs.run(handle, "return [diffstreamStreams.mode, diffstream.state]") == ["tab", "live"],
                     message="the page to fall back to the elected tab")
        assert len(server.stream_requests) == 1, "the two tabs share one stream"
    finally:
        server.stop()
