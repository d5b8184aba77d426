"""A page on another origin than its DiffStream server (issue 50), in headless Chromium: the page of
docs/client-js.md ("A complete page", importing the library from the server and connecting with
`baseURL`), served by a small static server on another port.

- Against a server started WITHOUT `--allow-origin`, the browser refuses the streams (CORS), which a page
  sees only as a network error: after a few tries the feed's status is `unreachable` (the page shows it),
  its error says why in words, and the console says once to start the server with `--allow-origin` and
  the page's origin. It goes on trying meanwhile.
- Against a server started with `--allow-origin <the page's origin>`, the same page is live.
"""
import functools
import http.server
import pathlib
import sys
import threading

import pytest
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import Server  # noqa: E402

SCORES = {"sections": [{"id": "table", "model": {"title": "Table"}, "items": [
    {"id": "ana", "kind": "player", "model": {"name": "Ana", "stats": {"score": 3}}}]}]}

# docs/client-js.md's complete page, with the server's URL where a page on another origin names it.
PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Scores elsewhere</title></head>
<body>
  <h1>Scores <small id="state"></small></h1>
  <p id="why"></p>
  <div id="scores"></div>
  <template data-kind="player"><span data-text="name"></span> <strong data-text="stats.score"></strong></template>
  <script type="module">
    import { connect, render } from '%(server)s/_diffstream/current/diffstream.js';

    connect({ baseURL: '%(server)s' });
    window.unreachable = [];
    window.scores = render(document.getElementById('scores'), 'scores', {
      onChange(change, feed) {
        document.getElementById('state').textContent = `${feed.status}, version ${feed.version ?? '–'}`;
        document.getElementById('why').textContent = feed.error ? feed.error.detail || '' : '';
        if (change.type === 'state' && change.state === 'unreachable') window.unreachable.push(change.detail);
      },
    });
  </script>
</body>
</html>
"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def elsewhere(tmp_path):
    """A static server for the page on another port of 127.0.0.1: another origin than the DiffStream server's."""
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(tmp_path)))
    threading.Thread(target=site.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{site.server_address[1]}"

    def page_for(server):
        (tmp_path / "scores.html").write_text(PAGE % {"server": server.url})
        return f"{origin}/scores.html"

    yield origin, page_for
    site.shutdown()
    site.server_close()


@pytest.fixture
def browser(browser):
    """The session's browser, left on a blank page with its console read: the refused streams' errors
    (CORS, a stopped server) are this module's, not the next test's."""
    yield browser
    browser.get("about:blank")
    browser.get_log("browser")


def state_text(browser):
    return browser.execute_script("return document.getElementById('state').textContent")


def test_without_allow_origin_the_page_says_unreachable_and_names_the_flag(browser, elsewhere):
    origin, page_for = elsewhere
    server = Server()  # no --allow-origin
    try:
        server.request("PUT", "/feeds/scores", SCORES)
        browser.get_log("browser")  # what earlier tests' pages logged is theirs
        browser.get(page_for(server))
        # A few tries with no answer (about 6 s), then the status says so; never "connecting" for ever.
        WebDriverWait(browser, 30, poll_frequency=0.1).until(lambda d: state_text(d).startswith("unreachable"),
                                                             message="the page to show unreachable")
        assert state_text(browser) == "unreachable, version –"
        why = browser.execute_script("return document.getElementById('why').textContent")
        assert f"--allow-origin {origin}" in why and server.url in why, why
        assert browser.execute_script("return window.scores.state.connection") == "unreachable"
        assert browser.execute_script("return window.unreachable.length") == 1, "the handler heard it once"
        # The console says it once, naming the flag and this page's origin.
        said = [entry for entry in browser.get_log("browser") if "--allow-origin" in entry["message"]]
        assert len(said) == 1, said
        assert said[0]["level"] == "WARNING" and f"--allow-origin {origin}" in said[0]["message"], said
        # It goes on trying: the server sees the streams asked for again (refused by the browser, not by it).
        tries = len([line for line in server.log if "/events" in line])
        WebDriverWait(browser, 40, poll_frequency=0.2).until(lambda _: len([line for line in server.log if "/events" in line]) > tries,
                                                             message="another try at the stream")
        assert state_text(browser) == "unreachable, version –"
    finally:
        server.stop()


def test_with_allow_origin_the_same_page_is_live(browser, elsewhere):
    origin, page_for = elsewhere
    server = Server(extra=["--allow-origin", origin])
    try:
        server.request("PUT", "/feeds/scores", SCORES)
        browser.get_log("browser")
        browser.get(page_for(server))
        WebDriverWait(browser, 20, poll_frequency=0.1).until(lambda d: state_text(d) == "live, version 1", message="the page to be live")
        assert browser.execute_script("return document.querySelector('#scores [data-item-id=\"ana\"]').textContent").split() == ["Ana", "3"]
        server.request("PUT", "/feeds/scores", {"sections": [{"id": "table", "model": {"title": "Table"}, "items": [
            {"id": "ana", "kind": "player", "model": {"name": "Ana", "stats": {"score": 4}}}]}]})
        WebDriverWait(browser, 20, poll_frequency=0.1).until(lambda d: state_text(d) == "live, version 2", message="a write to reach the page")
        assert not [entry for entry in browser.get_log("browser") if "--allow-origin" in entry["message"]]
    finally:
        server.stop()
