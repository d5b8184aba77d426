"""Who is here (issue 55) in Chromium: two pages with different tokens, each showing the presence feed
of the feed it shows with the library's templates (checks/browser/pages/presence.html), see each other
arrive and leave. The pages are on two origins (127.0.0.1 and localhost), so each has its own cookie
(its token) and its own SharedWorker, like two people's browsers. And the demo page (`diffstream --demo`,
Public/index.html): its bar shows who is watching the feed shown, the count and the names, the same way."""
import json
import shutil
import sys
import urllib.request

import pytest

from harness import ROOT, Server, wait_for  # noqa: E402 (conftest puts checks/ on the path)
from test_client_lib import PAGES

sys.path.insert(0, str(ROOT / "checks" / "e2e"))
from e2e_helpers import JWT_SECRET, jwt_token, rights  # noqa: E402 (the e2e suite's tokens)


def token(sub, name):
    payload = rights(subscribe=("*",))
    payload.update(sub=sub, name=name)
    return jwt_token(payload)


@pytest.fixture
def presence_server(tmp_path):
    public = tmp_path / "public"
    shutil.copytree(ROOT / "Public", public)
    shutil.copy(PAGES / "presence.html", public / "presence.html")
    secret = tmp_path / "jwt-secret"
    secret.write_text(JWT_SECRET + "\n")
    server = Server(public=public, extra=["--presence-names", "board", "--presence-grace", "0.5", "--presence-interval", "0.2",
                                          "--jwt-secret-file", str(secret), "--token", "admin-token"])
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/feeds/board", method="PUT",
                                     data=json.dumps({"sections": [{"id": "s", "model": None, "items": []}]}).encode(),
                                     headers={"Authorization": "Bearer admin-token", "Content-Type": "application/json"})
    urllib.request.urlopen(request).read()
    yield server
    server.stop()


def open_as(browser, origin, who):
    """Opens presence.html on `origin` with `who`'s token in that origin's cookie; returns the window."""
    browser.get(f"{origin}/favicon.svg")
    browser.add_cookie({"name": "diffstreamAuthorization", "value": token(*who), "path": "/"})
    browser.get(f"{origin}/presence.html")
    return browser.current_window_handle


def names(browser, window):
    browser.switch_to.window(window)
    return sorted(browser.execute_script("return window.names ? window.names() : []"))


def test_two_pages_with_different_tokens_see_each_other_arrive_and_leave(browser, presence_server):
    port = presence_server.port
    first = browser.current_window_handle
    alice = open_as(browser, f"http://127.0.0.1:{port}", ("alice@example.com", "Alice"))
    wait_for(lambda: names(browser, alice) == ["Alice"], message="Alice to see herself")
    browser.switch_to.new_window("tab")
    bob = open_as(browser, f"http://localhost:{port}", ("bob@example.com", "Bob"))
    wait_for(lambda: names(browser, bob) == ["Alice", "Bob"], message="Bob to see Alice and himself")
    wait_for(lambda: names(browser, alice) == ["Alice", "Bob"], message="Alice to see Bob arrive")
    browser.switch_to.window(bob)
    browser.close()
    wait_for(lambda: names(browser, alice) == ["Alice"], message="Alice to see Bob leave")
    browser.switch_to.window(alice)
    browser.delete_all_cookies()
    browser.get("about:blank")
    assert first == alice


# The demo page's "watching" line (Public/index.html #presence): the feed's presence feed, rendered with the
# templates of #presence-looks. Read from the DOM, as a person sees it.
WATCHING = """
const box = document.getElementById('presence');
const count = box.querySelector('.presence-count span');
return {feed: window.diffstream.presence, shown: !box.hidden, count: count ? Number(count.textContent) : null,
        users: [...box.querySelectorAll('.presence-user')].map((li) => [li.querySelector('.avatar').textContent,
                                                                         li.querySelector('.presence-name').textContent])};
"""


def watching(browser, window):
    browser.switch_to.window(window)
    return browser.execute_script(WATCHING)


@pytest.fixture
def demo_server(tmp_path):
    """`diffstream --demo` as README's first command runs it (its own page), with a JWT secret for a named
    token, and short presence intervals so that leaves show within the test's wait."""
    secret = tmp_path / "jwt-secret"
    secret.write_text(JWT_SECRET + "\n")
    server = Server(extra=["--demo", "--jwt-secret-file", str(secret), "--presence-grace", "0.5", "--presence-interval", "0.2"])
    yield server
    server.stop()


def test_two_browsers_on_the_demo_page_see_who_is_watching(browser, demo_server):
    """--demo turns presence (with names) on: Alice (a token with her name) on 127.0.0.1 and an anonymous
    visitor on localhost (two origins: two browsers' cookies and SharedWorkers) watch the week feed; each
    page's bar shows 2 watching, Alice's avatar and name and the visitor's "?"; when the visitor's tab
    closes, Alice's page goes back to 1. A family member's page (?user=alice) shows its own presence feed,
    which GET /feeds does not list (the page reads its document's DiffStream-Presence header)."""
    port = demo_server.port
    first = browser.current_window_handle
    alice = open_demo(browser, f"http://127.0.0.1:{port}", ("alice@example.com", "Alice"))
    wait_for(lambda: watching(browser, alice) == {"feed": "_presence.week", "shown": True, "count": 1, "users": [["A", "Alice"]]},
             message="Alice's page to show her watching week")
    browser.switch_to.new_window("tab")
    visitor = open_demo(browser, f"http://localhost:{port}", None)
    both = {"feed": "_presence.week", "shown": True, "count": 2, "users": [["A", "Alice"], ["?", ""]]}
    wait_for(lambda: watching(browser, visitor) == both, message="the visitor's page to show 2 watching")
    wait_for(lambda: watching(browser, alice) == both, message="Alice's page to show the visitor arrive")
    browser.switch_to.window(visitor)
    browser.close()
    wait_for(lambda: watching(browser, alice)["count"] == 1, message="Alice's page to show the visitor leave")
    assert watching(browser, alice)["users"] == [["A", "Alice"]]

    browser.get(f"http://127.0.0.1:{port}/?user=alice")
    wait_for(lambda: watching(browser, alice) == {"feed": "_presence.home.alice", "shown": True, "count": 1, "users": [["A", "Alice"]]},
             message="a family member's page to show its own presence feed")
    browser.delete_all_cookies()
    browser.get("about:blank")
    assert first == alice


def open_demo(browser, origin, who):
    """Opens the demo page on the week feed at `origin`, with `who`'s token (sub, name) in that origin's
    cookie (none: anonymous); returns the window."""
    browser.get(f"{origin}/favicon.svg")
    browser.delete_all_cookies()
    if who:
        browser.add_cookie({"name": "diffstreamAuthorization", "value": token(*who), "path": "/"})
    browser.get(f"{origin}/?feed=week")
    return browser.current_window_handle
