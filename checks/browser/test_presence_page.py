"""Who is here (issue 55) in Chromium: two pages with different tokens, each showing the presence feed
of the feed it shows with the library's templates (checks/browser/pages/presence.html), see each other
arrive and leave. The pages are on two origins (127.0.0.1 and localhost), so each has its own cookie
(its token) and its own SharedWorker, like two people's browsers."""
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
