"""The page in a real browser: it renders each feed, applies batches, keeps input state, reconnects."""
import json
import re
import subprocess

import pytest
from selenium.webdriver.support.ui import Select

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import Server, free_port, save_screenshot, wait_for  # noqa: E402

DOM_STATE = """
const feed = document.getElementById('feed');
return {
  feed: feed && feed.dataset.feed,
  sections: [...document.querySelectorAll('[data-section-id]')].map(s => ({
    id: s.dataset.sectionId,
    // An item's text, with the values of its text fields (a to-do's title is edited in place).
    items: [...s.querySelectorAll('[data-item-id]')].map(i => ({id: i.dataset.itemId,
      text: i.textContent + [...i.querySelectorAll('input[type=text]')].map(x => ' ' + x.value).join('')})),
  })),
  version: (document.getElementById('version') || {}).textContent,
  state: (document.getElementById('status') || {}).dataset ? document.getElementById('status').dataset.state : null,
};
"""


def dom(driver):
    return driver.execute_script(DOM_STATE)


def matches(driver, document):
    """The DOM shows exactly the sections and items of `document`, in order, with their titles."""
    state = dom(driver)
    if state["version"] is None or state["version"].strip() != str(document["version"]):
        return False
    if [s["id"] for s in state["sections"]] != [s["id"] for s in document["sections"]]:
        return False
    for shown, expected in zip(state["sections"], document["sections"]):
        if [i["id"] for i in shown["items"]] != [i["id"] for i in expected["items"]]:
            return False
        for item_shown, item in zip(shown["items"], expected["items"]):
            model = item.get("model") or {}
            title = model.get("title") if isinstance(model, dict) else None
            if title and title not in item_shown["text"]:
                return False
    return True


def open_feed(driver, server, feed):
    driver.get(f"{server.url}/?feed={feed}")
    document = server.request("GET", f"/feeds/{feed}")
    wait_for(lambda: matches(driver, document), message=f"{feed} to render version {document['version']}")
    return document


def media(mid, title, kind="image"):
    return {"id": mid, "type": kind, "title": title, "url": f"/media/{mid}.jpg"}


def test_home_renders_like_the_feed(browser, server):
    browser.get_log("browser")  # what earlier tests' pages logged is theirs
    open_feed(browser, server, "home")
    assert dom(browser)["feed"] == "home"
    assert dom(browser)["state"] == "live"
    save_screenshot(browser, "home")
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_a_chosen_users_home_feed(browser, server):
    """?user=NAME shows that user's member of the home family (issue 38), names it, and follows its PATCH."""
    for user, name in [("alice", "Alice"), ("bob", "Bob")]:
        browser.get(f"{server.url}/?user={user}")
        document = server.request("GET", f"/feeds/home.{user}")
        wait_for(lambda: matches(browser, document), message=f"home.{user} to render")
        assert dom(browser)["feed"] == f"home.{user}"
        assert browser.title.startswith(f"home.{user}")
        # Awaited, not read once: the item can be in the DOM a moment before its text is shown.
        wait_for(lambda: f"Welcome back, {name}" in browser.find_element("id", "feed").text, message=f"{name}'s welcome to show")
        assert f"home.{user}" in browser.find_element("id", "try-live").text
        # "Try it with curl" shows two users' own feeds: this one's and another's.
        other = "bob" if user == "alice" else "alice"
        commands = browser.find_element("id", "try-command").text.splitlines()
        assert [line.rsplit("/feeds/", 1)[1] for line in commands] == [f"home.{user}/events", f"home.{other}/events"]
    changed = server.request("PATCH", "/feeds/home.bob", {"banner": {"id": "only-bob", "title": "Only for Bob"}})
    wait_for(lambda: "Only for Bob" in browser.find_element("id", "feed").text, message="Bob's PATCH to show")
    assert changed["version"] == 2


def test_patches_converge(browser, server):
    open_feed(browser, server, "home")
    browser.execute_script("document.getElementById('animate').checked = true")
    patches = [
        {"banner": None},
        {"suggested": [media("m3", "Desert dunes"), media("n1", "New one", "video"), media("m1", "Northern lights")]},
        {"recommended": [media("m1", "Northern lights"), media("m7", "Snowy peaks"), media("m5", "Mountain trail", "video")],
         "recommendedHeader": {"title": "Picked for you", "isFeatured": True}},
        {"banner": {"id": "hello", "title": "Hello again"}, "suggested": [media("n1", "Renamed", "video"), media("m3", "Desert dunes")]},
        {"recommended": []},
    ]
    for patch in patches:
        server.request("PATCH", "/feeds/home", patch)
        document = server.request("GET", "/feeds/home")
        wait_for(lambda: matches(browser, document), message=f"home to converge after {patch}")
    save_screenshot(browser, "home-after-patches")


def test_typed_text_survives_an_update_of_its_item(browser, server):
    open_feed(browser, server, "home")
    selector = "li[data-item-id='suggested-m1'] input.note"
    browser.execute_script(f"""
        const input = document.querySelector("{selector}");
        input.focus(); input.value = 'half-typed'; input.setSelectionRange(2, 6);
        input.__marker = 'same-element';""")
    home = server.request("GET", "/feeds/home")
    suggested = [i["model"] for s in home["sections"] if s["id"] == "suggested" for i in s["items"]]
    suggested = [{**m, "type": "image" if m["id"] != "m2" else "video"} for m in suggested]
    suggested[0]["title"] = "Northern lights, updated"
    server.request("PATCH", "/feeds/home", {"suggested": suggested})
    wait_for(lambda: "updated" in browser.execute_script(
        "return document.querySelector(\"li[data-item-id='suggested-m1']\").textContent"), message="the title update")
    state = browser.execute_script(f"""
        const input = document.querySelector("{selector}");
        return {{value: input.value, focused: document.activeElement === input, marker: input.__marker,
                 start: input.selectionStart, end: input.selectionEnd}};""")
    assert state == {"value": "half-typed", "focused": True, "marker": "same-element", "start": 2, "end": 6}


def test_restart_shows_reconnecting_then_converges(browser):
    port = free_port()
    first = Server(port=port)
    try:
        open_feed(browser, first, "home")
    finally:
        first.stop()
    wait_for(lambda: dom(browser)["state"] == "reconnecting", message="the page to show reconnecting")
    second = Server(port=port)
    try:
        second.request("PATCH", "/feeds/home", {"banner": None})
        document = second.request("GET", "/feeds/home")
        wait_for(lambda: matches(browser, document), timeout=20, message="the page to converge after the restart")
        assert dom(browser)["state"] in ("resynced", "live")
        # The page reconnected by itself on the multi-feed route, each feed's position in the URL (docs/client-js-protocol.md).
        second.wait_log("sse connect .* /events from .* feeds=1")
    finally:
        second.stop()


def test_deal_appends_a_card(browser, server):
    before = open_feed(browser, server, "blackjack")
    cards_before = len(before["sections"][0]["items"])
    # The button is the generic control for the action the server declares (no name is built into the page).
    browser.find_element("css selector", "#actions form[data-action='deal'] .action-button").click()
    after = wait_for(lambda: (lambda d: d if d["version"] == before["version"] + 1 else None)(server.request("GET", "/feeds/blackjack")),
                     message="the deal to publish")
    wait_for(lambda: matches(browser, after), message="the new card to show")
    cards_after = len(after["sections"][0]["items"])
    assert cards_after == cards_before + 1 or cards_after == 1
    save_screenshot(browser, "blackjack")


def test_select_changes_only_the_hours_that_differ(browser, server):
    before = open_feed(browser, server, "forecast")
    hours_before = {i["id"]: i["model"] for s in before["sections"] if s["id"] == "hourly" for i in s["items"]}
    browser.execute_script("""
        window.__mutated = new Set();
        document.querySelectorAll("[data-section-id='hourly'] [data-item-id]").forEach(li => {
          new MutationObserver(() => window.__mutated.add(li.dataset.itemId))
            .observe(li, {subtree: true, childList: true, characterData: true, attributes: true});
        });""")
    browser.execute_script("document.querySelector(\"[data-item-id='d-wed']\").click()")
    after = wait_for(lambda: (lambda d: d if d["version"] == before["version"] + 1 else None)(server.request("GET", "/feeds/forecast")),
                     message="the select to publish")
    wait_for(lambda: matches(browser, after), message="the forecast to converge")
    hours_after = {i["id"]: i["model"] for s in after["sections"] if s["id"] == "hourly" for i in s["items"]}
    differing = {hid for hid in hours_after if hours_after[hid] != hours_before.get(hid)}
    assert differing and differing != set(hours_after)
    mutated = set(browser.execute_script("return [...window.__mutated]"))
    assert mutated == differing
    save_screenshot(browser, "forecast")


@pytest.mark.parametrize("feed", ["week", "forecast", "blackjack"])
def test_each_feed_renders(browser, server, feed):
    open_feed(browser, server, feed)
    save_screenshot(browser, feed)


def test_https_and_a_gzipped_event_stream(browser, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    secure = Server(tls=(str(cert), str(key)))
    try:
        open_feed(browser, secure, "home")
        secure.request("PATCH", "/feeds/home", {"banner": None})
        document = secure.request("GET", "/feeds/home")
        wait_for(lambda: matches(browser, document), message="the page to apply a batch over HTTPS")
        secure.wait_log("sse connect .* gzip")  # the browser's event stream was gzipped
        save_screenshot(browser, "home-https")
    finally:
        secure.stop()


def test_a_generic_feed_with_an_unknown_kind_renders_as_json(browser, server):
    server.request("PUT", "/feeds/generic", {"sections": [{"id": "s", "model": {"title": "Generic"}, "items": [
        {"id": "x1", "kind": "widget", "model": {"title": "A widget", "size": 3}}]}]})
    open_feed(browser, server, "generic")
    text = browser.execute_script("return document.querySelector(\"li[data-item-id='x1'] pre.json\").textContent")
    assert '"size": 3' in text
    assert browser.execute_script("return document.getElementById('feed-picker').value") == "generic"


def test_phone_width_layout(browser, server):
    browser.set_window_size(390, 844)
    try:
        open_feed(browser, server, "home")
        widths = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth,"
            " document.querySelector(\"li[data-item-id='suggested-m1']\").getBoundingClientRect().width]")
        assert widths[0] <= widths[1], "no horizontal scrolling"
        assert widths[2] > 250, "media items stack full width on a phone"
        save_screenshot(browser, "home-phone")
    finally:
        browser.set_window_size(1200, 900)


def todo_titles(server):
    """The to-do feed as {section id: [titles]}."""
    document = server.request("GET", "/feeds/todo")
    return {s["id"]: [i["model"]["title"] for i in s["items"]] for s in document["sections"]}


def wait_version(server, browser, version):
    document = wait_for(lambda: (lambda d: d if d["version"] >= version else None)(server.request("GET", "/feeds/todo")),
                        message=f"todo to reach version {version}")
    wait_for(lambda: matches(browser, document), message=f"the page to show todo version {document['version']}")
    return document


def item_control(browser, item_id, selector):
    return browser.find_element("css selector", f"li[data-item-id='{item_id}'] {selector}")


def still(browser):
    """No animation runs (a moving element is not where a click lands)."""
    wait_for(lambda: browser.execute_script("return document.getAnimations().length === 0"), message="animations to end")


def test_todo_through_its_own_controls(browser, server):
    document = open_feed(browser, server, "todo")
    version = document["version"]
    # add, from the bar's generic form for the action's "title" field
    bar = browser.find_element("css selector", "#actions form[data-action='add']")
    title = bar.find_element("css selector", "input[name='title']")
    for text in ["Buy milk", "Call Ana", "Fix the bike"]:
        title.send_keys(text)
        bar.find_element("css selector", ".action-button").click()
        version += 1
        wait_version(server, browser, version)
    assert todo_titles(server) == {"todo": ["Buy milk", "Call Ana", "Fix the bike"], "done": []}
    assert title.get_attribute("value") == ""
    ids = {i["model"]["title"]: i["id"] for i in server.request("GET", "/feeds/todo")["sections"][0]["items"]}
    # toggle: the item's checkbox
    still(browser)
    item_control(browser, ids["Call Ana"], "input.todo-done").click()
    version += 1
    wait_version(server, browser, version)
    assert todo_titles(server) == {"todo": ["Buy milk", "Fix the bike"], "done": ["Call Ana"]}
    assert browser.execute_script(f"return document.querySelector(\"li[data-item-id='{ids['Call Ana']}']\").closest('section').dataset.sectionId") == "done"
    assert item_control(browser, ids["Call Ana"], "input.todo-done").is_selected()
    # rename: the title is edited in place; Enter saves
    still(browser)
    field = item_control(browser, ids["Buy milk"], "input.todo-title")
    field.click()
    browser.execute_script("arguments[0].select()", field)
    field.send_keys("Buy oat milk\n")
    version += 1
    wait_version(server, browser, version)
    assert todo_titles(server)["todo"] == ["Buy oat milk", "Fix the bike"]
    # reorder: down moves it after the next one, up before the previous one
    still(browser)
    item_control(browser, ids["Buy milk"], "button[data-move='down']").click()
    version += 1
    wait_version(server, browser, version)
    assert todo_titles(server)["todo"] == ["Fix the bike", "Buy oat milk"]
    still(browser)
    item_control(browser, ids["Buy milk"], "button[data-move='up']").click()
    version += 1
    wait_version(server, browser, version)
    assert todo_titles(server)["todo"] == ["Buy oat milk", "Fix the bike"]
    # remove: the item's ✕, then clear the done ones from the bar
    still(browser)
    item_control(browser, ids["Fix the bike"], "button[data-action='remove']").click()
    version += 1
    wait_version(server, browser, version)
    browser.find_element("css selector", "#actions form[data-action='clearDone'] .action-button").click()
    version += 1
    wait_version(server, browser, version)
    assert todo_titles(server) == {"todo": ["Buy oat milk"], "done": []}
    # a refused action shows the server's reason
    title.send_keys("x" * 201)
    bar.find_element("css selector", ".action-button").click()
    wait_for(lambda: "title" in browser.find_element("id", "error-text").text, message="the 422 to be shown")
    # a refused rename puts the title the feed shows back
    still(browser)
    field = item_control(browser, ids["Buy milk"], "input.todo-title")
    browser.execute_script("arguments[0].select()", field)
    field.send_keys("y" * 201 + "\n")
    wait_for(lambda: field.get_attribute("value") == "Buy oat milk", message="the title to go back")
    save_screenshot(browser, "todo")


def test_typing_keeps_focus_through_updates(browser, server):
    open_feed(browser, server, "todo")
    for text in ["one", "two"]:
        server.request("POST", "/feeds/todo/actions/add", {"title": text})
    document = wait_version(server, browser, 3)
    one = document["sections"][0]["items"][0]["id"]
    still(browser)
    field = item_control(browser, one, "input.todo-title")
    field.click()
    browser.execute_script("arguments[0].select()", field)
    field.send_keys("half-typ")
    # Updates arrive while typing: the item itself is renamed by someone else, moved, and others are added.
    server.request("POST", "/feeds/todo/actions/rename", {"id": one, "title": "one, renamed elsewhere"})
    server.request("POST", "/feeds/todo/actions/move", {"id": one, "before": None})
    server.request("POST", "/feeds/todo/actions/add", {"title": "three", "before": one})
    wait_for(lambda: server.request("GET", "/feeds/todo")["version"] >= 6, message="todo version 6")
    wait_for(lambda: browser.execute_script(
        "return [...document.querySelectorAll('[data-section-id=todo] [data-item-id]')].map(n => n.dataset.itemId)") ==
        [i["id"] for i in server.request("GET", "/feeds/todo")["sections"][0]["items"]], message="the order of version 6")
    field.send_keys("ed")
    state = browser.execute_script("""
        const input = document.activeElement;
        return {value: input.value, field: input.name, item: input.closest('li') && input.closest('li').dataset.itemId};""")
    assert state == {"value": "half-typed", "field": "title", "item": one}
    # The bar's text field keeps its focus too.
    bar_field = browser.find_element("css selector", "#actions form[data-action='add'] input[name='title']")
    bar_field.send_keys("new ")
    server.request("POST", "/feeds/todo/actions/toggle", {"id": one})
    wait_version(server, browser, 7)
    bar_field.send_keys("item")
    assert browser.execute_script("return [document.activeElement.value, document.activeElement.closest('#actions') !== null]") == ["new item", True]


def readme_first_put():
    """The README's first example: the feed name and the body of its first `curl -X PUT`, as written there."""
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    match = re.search(r"curl -X PUT http://127\.0\.0\.1:8080/feeds/(\w+) -d '(.*?)'", readme, re.S)
    assert match, "the README has no curl -X PUT example"
    return match.group(1), json.loads(match.group(2))


def test_the_readmes_first_example_shows_its_titles(browser, server):
    """Issue 37: the README's first feed shows "Hello" and "World", not two blank playing cards (the demo's
    card template is blackjack's alone)."""
    feed, body = readme_first_put()
    server.request("PUT", f"/feeds/{feed}", body)
    open_feed(browser, server, feed)
    shown = browser.execute_script("return [...document.querySelectorAll('#feed [data-item-id]')].map(i => i.innerText)")
    titles = [item["model"]["title"] for section in body["sections"] for item in section["items"]]
    assert len(shown) == len(titles) and all(title in text for title, text in zip(titles, shown)), shown
    assert browser.execute_script("return document.querySelectorAll('#feed .face').length") == 0


def test_the_page_lands_on_home_and_says_how_to_try_it(browser, server):
    """Issue 37: without ?feed the demo opens on home (not the alphabetically first feed), and one line says
    what is live and the curl command that follows the feed shown."""
    browser.get(f"{server.url}/")
    wait_for(lambda: dom(browser)["feed"] == "home" and dom(browser)["state"] == "live", message="the page to open on home")
    line = browser.execute_script("return document.getElementById('try').innerText")
    assert f"curl -N {server.url}/feeds/home/events" in line and line.startswith("home:"), line
    browser.execute_script("const p = document.getElementById('feed-picker'); p.value = 'todo'; p.dispatchEvent(new Event('change'))")
    wait_for(lambda: f"{server.url}/feeds/todo/events" in browser.execute_script("return document.getElementById('try').innerText"),
             message="the line to follow the feed picked")


def test_the_dashboard_stacks_panels_without_gaps_and_caps_their_height(browser, server):
    """Issue 37: panels of different heights in columns, each at most 70% of the window and scrolling inside;
    the home posters get their colours from the page's own hook."""
    browser.get(f"{server.url}/dashboard.html")
    live = "return [...document.querySelectorAll('[data-panel] .status')].filter(s => s.dataset.state === 'live').length"
    wait_for(lambda: browser.execute_script(live) >= 5, timeout=20, message="the examples' panels to be live")
    boxes = browser.execute_script("""
      return [...document.querySelectorAll('[data-panel]')].map(p => {
        const r = p.getBoundingClientRect(); return {feed: p.dataset.panel, left: Math.round(r.left), top: r.top, bottom: r.bottom, height: r.height};
      });""")
    cap = browser.execute_script("return window.innerHeight") * 0.7 + 1
    assert all(box["height"] <= cap for box in boxes), boxes
    columns = {}
    for box in boxes:
        columns.setdefault(box["left"], []).append(box)
    for column in columns.values():
        column.sort(key=lambda box: box["top"])
        for above, below in zip(column, column[1:]):
            assert below["top"] - above["bottom"] <= 20, (above, below)  # the margin between panels, no more
    scrolls = browser.execute_script("const r = document.querySelector(\"[data-panel='home'] .feed-region\"); return [r.scrollHeight, r.clientHeight]")
    assert scrolls[0] > scrolls[1], "the home panel scrolls inside its cap"
    hues = browser.execute_script("return [...document.querySelectorAll(\"[data-panel='home'] .poster\")].map(p => p.style.getPropertyValue('--hue'))")
    assert len(hues) > 1 and len(set(hues)) > 1, hues
