"""A private feed in a real browser: EventSource carries the diffstreamAuthorization cookie (issue 13)."""
import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import ROOT, Server, wait_for  # noqa: E402

SECRET = "browser-secret-of-at-least-thirty-two-bytes"

OPEN_STREAM = """
window.__events = []; window.__errors = 0;
const source = new EventSource('/feeds/' + arguments[0] + '/events');
window.__source = source;
source.addEventListener('snapshot', e => window.__events.push(['snapshot', JSON.parse(e.data)]));
source.addEventListener('batch', e => window.__events.push(['batch', JSON.parse(e.data)]));
source.addEventListener('unauthorized', e => window.__events.push(['unauthorized', JSON.parse(e.data)]));
source.onerror = () => { window.__errors += 1; };
"""


def mint(*args):
    binary = os.environ.get("DIFFSTREAM_BIN", str(ROOT / ".build" / "debug" / "diffstream"))
    made = subprocess.run([binary, "token", *args], capture_output=True, text=True, timeout=20,
                          env={**os.environ, "DIFFSTREAM_JWT_SECRET": SECRET})
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@pytest.fixture(autouse=True)
def drained_console(browser):
    """The refused streams (401, 403) log network errors on purpose: read them here, so that the shared
    browser's console is clean for the next test (test_page checks there are no errors)."""
    yield
    browser.get("about:blank")
    browser.get_log("browser")


@pytest.fixture
def private_server():
    server = Server(extra=["--private", "--public-feeds", "home"], env={"DIFFSTREAM_JWT_SECRET": SECRET}, name="browser-private")
    yield server
    server.stop()


def test_event_source_reads_a_private_feed_with_the_cookie(browser, private_server):
    server = private_server
    writer = {"Authorization": "Bearer " + mint("--publish", "user-42-*")}
    document = {"sections": [{"id": "s", "items": [{"id": "a", "kind": "card", "model": {"title": "A"}}]}]}
    server.request("PUT", "/feeds/user-42-inbox", document, headers=writer)
    browser.get(server.url + "/healthz")
    browser.delete_all_cookies()

    # Without the cookie the stream is refused (401), and EventSource gives up.
    browser.execute_script(OPEN_STREAM, "user-42-inbox")
    wait_for(lambda: browser.execute_script("return window.__source.readyState === 2 && window.__errors > 0"),
             message="EventSource to fail without the cookie")
    assert browser.execute_script("return window.__events") == []

    # With another user's token it is refused too (403).
    browser.execute_script("document.cookie = 'diffstreamAuthorization=' + arguments[0] + '; path=/; SameSite=Strict'",
                           mint("--subscribe", "user-7-*"))
    browser.execute_script(OPEN_STREAM, "user-42-inbox")
    wait_for(lambda: browser.execute_script("return window.__source.readyState === 2"), message="EventSource to fail with 403")

    # With the right token in the cookie: the snapshot, then a batch.
    browser.execute_script("document.cookie = 'diffstreamAuthorization=' + arguments[0] + '; path=/; SameSite=Strict'",
                           mint("--subscribe", "user-42-*"))
    browser.execute_script(OPEN_STREAM, "user-42-inbox")
    snapshot = wait_for(lambda: browser.execute_script("return window.__events.find(e => e[0] === 'snapshot')"),
                        message="the snapshot over the cookie")
    assert snapshot[1]["feed"] == "user-42-inbox" and snapshot[1]["version"] == 1
    document["sections"][0]["items"].append({"id": "b", "kind": "card", "model": {"title": "B"}})
    server.request("PUT", "/feeds/user-42-inbox", document, headers=writer)
    batch = wait_for(lambda: browser.execute_script("return window.__events.find(e => e[0] === 'batch')"),
                     message="a batch over the cookie")
    assert batch[1]["version"] == 2
    browser.execute_script("window.__source.close()")
    assert server.alive()


def test_the_real_page_reads_a_private_feed_with_a_token_until_it_expires(browser, private_server):
    """The page's token form against the real server: 401 until a token is given, live with it, and the
    expired state once the server ends the stream at the token's expiry (exp + 5 s of leeway)."""
    from test_page import dom
    from test_page_auth import enter_token, shown
    server = private_server
    writer = {"Authorization": "Bearer " + mint("--publish", "user-42-*")}
    server.request("PUT", "/feeds/user-42-inbox", {"sections": [{"id": "s", "items": [
        {"id": "a", "kind": "card", "model": {"title": "A"}}]}]}, headers=writer)
    browser.get(f"{server.url}/favicon.svg")
    browser.execute_script("localStorage.removeItem('diffstream-token')")
    browser.delete_all_cookies()
    try:
        browser.get(f"{server.url}/?feed=user-42-inbox&streams=tab")
        wait_for(lambda: shown(browser)["state"] == "unauthorized", message="the unauthorized state from the real 401")
        enter_token(browser, mint("--subscribe", "user-42-*", "--lifetime", "1"))
        wait_for(lambda: dom(browser)["state"] == "live" and dom(browser)["version"] == "1", message="the stream with the token")
        wait_for(lambda: shown(browser)["state"] == "expired", timeout=30, message="the expired state after event: unauthorized")
        assert dom(browser)["version"] == "1"
    finally:
        browser.execute_script("localStorage.removeItem('diffstream-token')")
        browser.delete_all_cookies()
        browser.get("about:blank")
