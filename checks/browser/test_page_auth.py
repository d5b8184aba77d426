"""The page with tokens (issue 13, the page's part): the cookie for the shared event stream, Bearer on
writes, and a clear state on 401, on 403 and on an expired stream.

The server side of issue 13 is built elsewhere, so most of these run the real page (Public/) against a
small scripted server that answers like the issue says: 401 with `WWW-Authenticate: Bearer`, 403, and a
stream ended with `event: unauthorized`. Writes are checked against the real binary's `--token`.
"""
import re
import pytest

from harness import Server, wait_for  # noqa: E402 (conftest puts checks/ on the path)
from scripted_server import TOKEN, ScriptedServer
from test_page import dom


@pytest.fixture
def page(browser):
    servers = []

    def start(**kwargs):
        servers.append(ScriptedServer(**kwargs))
        return servers[-1]

    yield start
    browser.execute_script("localStorage.removeItem('diffstream-token')")
    browser.delete_all_cookies()
    browser.get("about:blank")
    for s in servers:
        s.stop()


def shown(driver):
    return driver.execute_script("""return {state: document.getElementById('status').dataset.state,
        notice: document.getElementById('notice').hidden ? '' : document.getElementById('notice').textContent,
        tokenOpen: document.querySelector('details.token').open}""")


def enter_token(driver, token):
    driver.execute_script("""const input = document.getElementById('token');
        input.value = arguments[0];
        input.dispatchEvent(new Event('input'));
        input.form.requestSubmit();""", token)


@pytest.mark.parametrize("mode", ["worker", "tab"])
def test_401_asks_for_a_token_and_the_cookie_carries_it_to_the_shared_stream(browser, page, mode):
    server = page(without_token=401)
    browser.get(f"{server.url}/?feed=home&streams={mode}")
    wait_for(lambda: shown(browser)["state"] == "unauthorized", message="the unauthorized state")
    assert "needs a token" in shown(browser)["notice"]
    assert shown(browser)["tokenOpen"] is True
    enter_token(browser, TOKEN)
    assert f"diffstreamAuthorization={TOKEN}" in browser.execute_script("return document.cookie")
    wait_for(lambda: dom(browser)["state"] == "live", message="the stream to open with the token")
    assert dom(browser)["version"] == "1" and shown(browser)["notice"] == ""
    assert server.stream_requests[-1][1] == f"diffstreamAuthorization={TOKEN}"
    # Clearing the token removes the cookie.
    enter_token(browser, "")
    assert "diffstreamAuthorization" not in browser.execute_script("return document.cookie")


def test_403_says_the_token_does_not_allow_the_feed_or_the_write(browser, page):
    server = page(without_token=403)
    browser.get(f"{server.url}/?feed=home")
    wait_for(lambda: shown(browser)["state"] == "forbidden", message="the forbidden state")
    assert "does not allow reading the feed “home”" in shown(browser)["notice"]
    browser.find_element("css selector", "#actions form[data-action='refresh'] .action-button").click()  # declared by /feeds
    wait_for(lambda: "does not allow this" in browser.find_element("id", "error-text").text, message="the 403 on a write")


@pytest.mark.parametrize("mode", ["worker", "tab"])
def test_an_expired_stream_asks_for_a_fresh_token_and_resumes(browser, page, mode):
    server = page(expire=True)
    browser.get(f"{server.url}/favicon.svg")  # the origin, without the page
    browser.execute_script("localStorage.setItem('diffstream-token', arguments[0])", TOKEN)
    browser.get(f"{server.url}/?feed=home&streams={mode}")  # the saved token sets the cookie at start
    wait_for(lambda: shown(browser)["state"] == "expired", message="the expired state")
    assert "expired" in shown(browser)["notice"] and shown(browser)["tokenOpen"] is True
    assert dom(browser)["version"] == "1", "the snapshot before the expiry stays shown"
    count = len(server.stream_requests)
    assert count == 1, f"an expired stream waits for a fresh token: {server.stream_requests}"
    server.expire = False
    enter_token(browser, TOKEN)
    wait_for(lambda: dom(browser)["state"] == "live", message="the stream to come back")
    # (The shared worker's hub also names its presence id, one for its whole life: issue 55.)
    url = re.sub(r"&presence-id=[0-9a-f]+$", "", server.stream_requests[count][0])
    assert url == "/events?feed=home@ds1.f00d.1", "it resumed from its last id"


def test_writes_send_the_token_as_bearer_and_show_401(browser):
    server = Server(extra=["--token", "secret-write-token"])
    try:
        browser.get(f"{server.url}/?feed=blackjack")
        wait_for(lambda: dom(browser)["state"] == "live", message="the page to be live")
        version = server.request("GET", "/feeds/blackjack")["version"]
        browser.find_element("css selector", "#actions form[data-action='deal'] .action-button").click()
        wait_for(lambda: "set a token" in browser.find_element("id", "error-text").text, message="the 401 message")
        enter_token(browser, "secret-write-token")
        browser.find_element("css selector", "#actions form[data-action='deal'] .action-button").click()
        wait_for(lambda: server.request("GET", "/feeds/blackjack")["version"] == version + 1, message="the deal with the token")
    finally:
        browser.execute_script("localStorage.removeItem('diffstream-token')")
        browser.delete_all_cookies()
        server.stop()
