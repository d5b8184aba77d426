"""The client library (Public/diffstream.js) in Chromium, from a page of a user's own (checks/browser/pages/lib.html,
served from a scratch --public directory next to the library's files, not from Public/), written only
against docs/client-js.md: a template for a kind no example uses, many feeds in one tab on one event
stream, regions that converge under random writes without recreating surviving elements, and a
data-action checkbox that toggles a to-do."""
import json
import pathlib
import random
import re
import shutil

import pytest

from harness import ROOT, Server, wait_for  # noqa: E402 (conftest puts checks/ on the path)

PAGES = pathlib.Path(__file__).resolve().parent / "pages"

REGIONS = """
const out = {};
for (const container of document.querySelectorAll('.region')) {
  out[container.dataset.feed] = [...container.querySelectorAll(':scope > [data-section-id]')].map(s => ({
    id: s.dataset.sectionId,
    items: [...s.querySelectorAll('[data-item-id]')].map(i => ({id: i.dataset.itemId, text: i.textContent.replace(/\\s+/g, ' ').trim()})),
  }));
}
return out;
"""


@pytest.fixture
def lib_server(tmp_path):
    """The server with a --public directory holding the library (every file of Public/) and the test pages."""
    public = tmp_path / "public"
    shutil.copytree(ROOT / "Public", public)
    for page in PAGES.iterdir():
        shutil.copy(page, public / page.name)
    server = Server(public=public)
    yield server
    server.stop()


@pytest.fixture
def page(browser):
    yield browser
    for handle in browser.window_handles[1:]:
        browser.switch_to.window(handle)
        browser.close()
    browser.switch_to.window(browser.window_handles[0])
    browser.get("about:blank")


def open_page(driver, server, feeds):
    driver.get(f"{server.url}/lib.html?feeds={','.join(feeds)}")
    wait_for(lambda: driver.execute_script("return window.libReady === true"), message="the test page to load")


def player(pid, name, score, **more):
    return {"id": pid, "kind": "player", "model": {"name": name, "stats": {"score": score, **more.pop("stats", {})}, **more}}


def shown_like(driver, documents):
    """Every region shows exactly its feed: section ids, item ids in order, and each player's name."""
    regions = driver.execute_script(REGIONS)
    for feed, document in documents.items():
        region = regions.get(feed)
        if region is None or [s["id"] for s in region] != [s["id"] for s in document["sections"]]:
            return False
        for shown, expected in zip(region, document["sections"]):
            if [i["id"] for i in shown["items"]] != [i["id"] for i in expected["items"]]:
                return False
            for item_shown, item in zip(shown["items"], expected["items"]):
                name = (item.get("model") or {}).get("name")
                if name and name not in item_shown["text"]:
                    return False
    return True


def event_streams(server):
    status, _, text = server.call("GET", "/metrics")
    assert status == 200
    text = text.decode() if isinstance(text, bytes) else str(text)
    match = re.search(r"^diffstream_event_streams(?:_open)?(?:\{\})? (\d+)", text, re.M)
    assert match, "no event stream gauge in /metrics"
    return int(match.group(1))


def test_a_template_for_a_kind_no_example_uses(page, lib_server):
    lib_server.request("PUT", "/feeds/players", {"sections": [{"id": "table", "model": {"title": "Table"}, "items": [
        player("p1", "<b>Ana</b>", 3, stats={"star": True, "leading": True}, url="javascript:alert(1)",
               avatar="https://example.com/ana.png", team="red"),
        player("p2", "Bo", 1, url="/players/bo", avatar="data:image/png;base64,AAAA", team="blue"),
    ]}]})
    open_page(page, lib_server, ["players"])
    wait_for(lambda: shown_like(page, {"players": lib_server.request("GET", "/feeds/players")}), message="the players")
    shown = page.execute_script("""
        const q = (id, sel) => document.querySelector(`[data-item-id='${id}'] ${sel}`);
        return {
          name: q('p1', '.name').textContent, bold: document.querySelectorAll('.region b').length,
          score: q('p1', '.score').textContent, star1: q('p1', '.star').hidden, star2: q('p2', '.star').hidden,
          href1: q('p1', '.profile').getAttribute('href'), href2: q('p2', '.profile').getAttribute('href'),
          onclick: q('p1', '.profile').getAttribute('onclick'), title: q('p1', '.profile').getAttribute('title'),
          src1: q('p1', '.avatar').getAttribute('src'), src2: q('p2', '.avatar').getAttribute('src'),
          leading1: q('p1', '.state').classList.contains('leading'), leading2: q('p2', '.state').classList.contains('leading'),
          team: q('p2', '.state').dataset.team, kind: document.querySelector("[data-item-id='p1']").dataset.kind,
          header: document.querySelector("[data-section-id='table'] .header").textContent.replace(/\\s+/g, ' ').trim(),
        };""")
    assert shown == {
        "name": "<b>Ana</b>", "bold": 0, "score": "3", "star1": False, "star2": True,
        "href1": None, "href2": "/players/bo", "onclick": None, "title": "<b>Ana</b>",
        "src1": "https://example.com/ana.png", "src2": None, "leading1": True, "leading2": False,
        "team": "blue", "kind": "player", "header": "Table table",
    }
    # A change of model updates the same elements in place; typing in the item survives it.
    page.execute_script("""
        const item = document.querySelector("[data-item-id='p1']");
        item.__mark = 'kept'; item.querySelector('.name').__mark = 'kept';
        const note = item.querySelector('.note'); note.focus(); note.value = 'half-typed'; note.setSelectionRange(1, 4);""")
    lib_server.request("PUT", "/feeds/players", {"sections": [{"id": "table", "model": {"title": "Final table"}, "items": [
        player("p2", "Bo", 5, url="/players/bo", team="blue"),
        player("p1", "Ana", 4, url="https://example.com/ana", team="red"),
    ]}]})
    wait_for(lambda: page.execute_script("return document.querySelector(\"[data-item-id='p1'] .score\").textContent") == "4",
             message="the update")
    state = page.execute_script("""
        const item = document.querySelector("[data-item-id='p1']");
        const note = item.querySelector('.note');
        return {item: item.__mark, name: item.querySelector('.name').__mark, text: item.querySelector('.name').textContent,
                href: item.querySelector('.profile').getAttribute('href'), value: note.value,
                focused: document.activeElement === note, selection: [note.selectionStart, note.selectionEnd],
                order: [...document.querySelectorAll('[data-item-id]')].map(n => n.dataset.itemId),
                header: document.querySelector("[data-section-id='table'] .header span").textContent};""")
    assert state == {"item": "kept", "name": "kept", "text": "Ana", "href": "https://example.com/ana", "value": "half-typed",
                     "focused": True, "selection": [1, 4], "order": ["p2", "p1"], "header": "Final table"}
    errors = [e for e in page.get_log("browser") if e["level"] == "SEVERE" and e.get("source") != "network"]
    assert errors == []


class Writer:
    """Random snapshots of feeds of players, with ids never reused; remembers every id ever removed."""

    def __init__(self, rng, feeds):
        self.rng = rng
        self.next = 0
        self.removed = set()
        self.documents = {feed: self.fresh() for feed in feeds}

    def new_player(self):
        self.next += 1
        return player(f"p{self.next}", f"Player {self.next}", self.rng.randrange(100))

    def fresh(self):
        return {"sections": [{"id": sid, "model": {"title": sid.upper()}, "items": [self.new_player() for _ in range(self.rng.randrange(1, 6))]}
                             for sid in ("a", "b")]}

    def change(self, feed):
        """One random write: items removed, added, moved (also across sections), renamed; sections reordered."""
        rng = self.rng
        sections = self.documents[feed]["sections"]
        items = [(s["id"], i) for s in sections for i in s["items"]]
        for _ in range(rng.randrange(1, 4)):
            choice = rng.random()
            if choice < 0.25 and items:
                sid, item = items.pop(rng.randrange(len(items)))
                self.removed.add(item["id"])
            elif choice < 0.5:
                items.insert(rng.randrange(len(items) + 1), (rng.choice(["a", "b"]), self.new_player()))
            elif choice < 0.75 and items:
                entry = items.pop(rng.randrange(len(items)))
                items.insert(rng.randrange(len(items) + 1), (rng.choice(["a", "b"]), entry[1]))
            elif items:
                index = rng.randrange(len(items))
                sid, item = items[index]
                item = {**item, "model": {**item["model"], "name": item["model"]["name"] + "!", "stats": {"score": rng.randrange(100)}}}
                items[index] = (sid, item)
        order = ["a", "b"] if rng.random() < 0.7 else ["b", "a"]
        self.documents[feed] = {"sections": [{"id": sid, "model": {"title": sid.upper()}, "items": [i for s, i in items if s == sid]}
                                             for sid in order]}
        return self.documents[feed]


def mark_all(driver):
    driver.execute_script("""
        for (const node of document.querySelectorAll('.region [data-item-id], .region [data-section-id]'))
          node.__mark = node.closest('.region').dataset.feed + '/' + (node.dataset.itemId ?? 's:' + node.dataset.sectionId);""")


def unmarked_survivors(driver):
    """Elements shown now that carry no mark, or another's: an element that was recreated (new ones are fine)."""
    return driver.execute_script("""
        const out = [];
        for (const node of document.querySelectorAll('.region [data-item-id], .region [data-section-id]')) {
          const key = node.closest('.region').dataset.feed + '/' + (node.dataset.itemId ?? 's:' + node.dataset.sectionId);
          out.push([key, node.__mark === undefined ? null : node.__mark]);
        }
        return out;""")


def test_ten_feeds_in_one_tab_converge_under_random_writes_on_one_stream(page, lib_server):
    rng = random.Random(24)
    feeds = [f"f{n}" for n in range(10)]
    writer = Writer(rng, feeds)
    for feed in feeds:
        lib_server.request("PUT", f"/feeds/{feed}", writer.documents[feed])
    open_page(page, lib_server, feeds)
    wait_for(lambda: shown_like(page, writer.documents), timeout=20, message="ten regions to load")
    mark_all(page)
    initial = {key for key, _ in unmarked_survivors(page)}
    for step in range(120):
        feed = rng.choice(feeds)
        lib_server.request("PUT", f"/feeds/{feed}", writer.change(feed))
        if step % 40 == 39:
            wait_for(lambda: shown_like(page, writer.documents), timeout=20, message=f"every region to converge at step {step}")
    wait_for(lambda: shown_like(page, writer.documents), timeout=20, message="every region to converge")
    for key, mark in unmarked_survivors(page):
        item = key.split("/", 1)[1]
        if key in initial and item not in writer.removed:
            assert mark == key, f"{key} was recreated"
        else:
            assert mark in (None, key)
    assert event_streams(lib_server) == 1
    errors = [e for e in page.get_log("browser") if e["level"] == "SEVERE" and e.get("source") != "network"]
    assert errors == []


def test_exactly_one_event_stream_for_the_whole_browser(page, lib_server):
    for feed in ("one", "two", "three"):
        lib_server.request("PUT", f"/feeds/{feed}", {"sections": [{"id": "s", "items": [player(f"{feed}-1", feed.title(), 1)]}]})
    open_page(page, lib_server, ["one", "two"])
    wait_for(lambda: shown_like(page, {f: lib_server.request("GET", f"/feeds/{f}") for f in ("one", "two")}), message="the first tab")
    page.switch_to.new_window("tab")
    open_page(page, lib_server, ["two", "three"])
    wait_for(lambda: shown_like(page, {f: lib_server.request("GET", f"/feeds/{f}") for f in ("two", "three")}), message="the second tab")
    lib_server.request("PUT", "/feeds/three", {"sections": [{"id": "s", "items": [player("three-2", "Third", 2)]}]})
    wait_for(lambda: shown_like(page, {"three": lib_server.request("GET", "/feeds/three")}), message="a write to show")
    wait_for(lambda: event_streams(lib_server) == 1, message="one event stream for both tabs")


def click_when_still(driver, selector):
    """Clicks an element once no animation runs (a moving element is not where a click lands)."""
    wait_for(lambda: driver.execute_script("return document.getAnimations().length === 0"), message="animations to end")
    driver.find_element("css selector", selector).click()


def todo_items(server):
    document = server.request("GET", "/feeds/todo")
    return {i["id"]: (s["id"], i["model"]) for s in document["sections"] for i in s["items"]}


def test_a_data_action_checkbox_toggles_a_todo(page, lib_server):
    lib_server.request("POST", "/feeds/todo/actions/add", {"title": "Buy milk"})
    (tid,) = todo_items(lib_server)
    open_page(page, lib_server, ["todo"])
    checkbox = f"[data-item-id='{tid}'] input.done"
    wait_for(lambda: page.execute_script(f"return document.querySelector(\"{checkbox}\") !== null"), message="the to-do")
    page.execute_script(f"document.querySelector(\"[data-item-id='{tid}']\").__mark = 'kept'")
    assert page.execute_script(f"return document.querySelector(\"{checkbox}\").checked") is False
    click_when_still(page, checkbox)
    wait_for(lambda: todo_items(lib_server)[tid] == ("done", {"title": "Buy milk", "done": True}), message="the toggle")
    wait_for(lambda: page.execute_script(f"""const item = document.querySelector("[data-item-id='{tid}']");
        return item.closest('[data-section-id]').dataset.sectionId === 'done' && item.querySelector('input.done').checked
          && item.__mark === 'kept';"""), message="the to-do to show as done, in place")
    click_when_still(page, checkbox)
    wait_for(lambda: todo_items(lib_server)[tid][1]["done"] is False, message="the toggle back")
    wait_for(lambda: page.execute_script(f"return !document.querySelector(\"{checkbox}\").checked"), message="unchecked")
    # A failed action: the checkbox goes back to what the feed shows, and the error is shown.
    page.execute_script("""const real = window.fetch;
        window.fetch = (url, init) => String(url).includes('/actions/') ? Promise.resolve(new Response(
          JSON.stringify({error: 'nope', detail: 'refused for the test'}), {status: 422, headers: {'Content-Type': 'application/json'}})) : real(url, init);""")
    click_when_still(page, checkbox)
    wait_for(lambda: "refused for the test" in page.execute_script(f"return document.querySelector(\"[data-item-id='{tid}'] [data-error]\").textContent"),
             message="the error to be shown")
    assert page.execute_script(f"return document.querySelector(\"{checkbox}\").checked") is False
    assert todo_items(lib_server)[tid][1]["done"] is False


def test_the_dashboard_shows_every_feed_live_on_one_stream(page, lib_server):
    for n in range(8):
        lib_server.request("PUT", f"/feeds/board{n}", {"sections": [{"id": "s", "items": [player(f"b{n}", f"Board {n}", n)]}]})
    # A family's entry (`"kind":"family"`) is not a feed of its own: the dashboard shows feeds.
    listed = [entry["feed"] for entry in lib_server.request("GET", "/feeds") if entry["kind"] != "family"]
    page.get(f"{lib_server.url}/dashboard.html")
    panels = "return [...document.querySelectorAll('[data-panel]')].filter(p => p.querySelector('.status').dataset.state === 'live').map(p => p.dataset.panel)"
    wait_for(lambda: sorted(page.execute_script(panels)) == sorted(listed), timeout=20, message="a live panel per feed")
    lib_server.request("PUT", "/feeds/board3", {"sections": [{"id": "s", "items": [player("b3-new", "Board three, again", 9)]}]})
    wait_for(lambda: page.execute_script("return document.querySelector(\"[data-panel='board3'] [data-item-id='b3-new']\") !== null"),
             message="a write to show on the dashboard")
    wait_for(lambda: event_streams(lib_server) == 1, message="one event stream for every feed")


def test_an_invalid_feed_name_is_refused_alone_and_the_other_feeds_go_on(page, lib_server):
    lib_server.request("PUT", "/feeds/good", {"sections": [{"id": "s", "items": [player("g1", "Good", 1)]}]})
    page.get(f"{lib_server.url}/lib.html?feeds=good,bad%20name,.hidden")
    wait_for(lambda: page.execute_script("return window.libReady === true"), message="the test page to load")
    wait_for(lambda: shown_like(page, {"good": lib_server.request("GET", "/feeds/good")}), message="the valid feed")
    refused = page.execute_script("""return ['bad name', '.hidden'].map((feed) => {
        const state = window.regions[feed].state;
        return [state.status, state.connection, state.error && state.error.status, /is not a feed id/.test(state.error && state.error.detail)];
      });""")
    assert refused == [["invalid", "closed", 400, True], ["invalid", "closed", 400, True]]
    assert page.execute_script("return window.changes.filter(([feed, type]) => feed !== 'good' && type !== 'state').length") == 0
    lib_server.request("PUT", "/feeds/good", {"sections": [{"id": "s", "items": [player("g2", "Better", 2)]}]})
    wait_for(lambda: shown_like(page, {"good": lib_server.request("GET", "/feeds/good")}), message="a write to the valid feed")
    assert event_streams(lib_server) == 1


def test_a_feed_deleted_then_created_again_is_followed_by_a_later_render(page, lib_server):
    lib_server.request("PUT", "/feeds/gone", {"sections": [{"id": "s", "items": [player("g1", "First", 1)]}]})
    open_page(page, lib_server, ["gone"])
    wait_for(lambda: shown_like(page, {"gone": lib_server.request("GET", "/feeds/gone")}), message="the feed")
    lib_server.request("DELETE", "/feeds/gone")
    wait_for(lambda: page.execute_script("return window.regions.gone.state.status") == "deleted", message="the deletion")
    assert page.execute_script("return document.querySelectorAll('#region-gone [data-item-id]').length") == 0
    lib_server.request("PUT", "/feeds/gone", {"sections": [{"id": "s", "items": [player("g2", "Second", 2)]}]})
    # A new render of the name (into another container) and a new subscription follow the feed created again.
    page.execute_script("""
        const container = document.createElement('div');
        container.id = 'again';
        document.body.append(container);
        window.again = window.lib.render(container, 'gone');
        window.againSnapshots = [];
        window.lib.subscribe('gone', { snapshot: (subscription, data) => window.againSnapshots.push(data.sections[0].items[0].id) });""")
    wait_for(lambda: page.execute_script("return document.querySelector('#again [data-item-id=\"g2\"]') !== null"),
             timeout=20, message="the feed created again, in a new region")
    wait_for(lambda: page.execute_script("return window.againSnapshots.includes('g2')"), message="the new subscription's snapshot")
    assert page.execute_script("return window.again.state.status") == "live"
    # The region of the deleted feed stays as it ended.
    assert page.execute_script("return [window.regions.gone.state.status, document.querySelectorAll('#region-gone [data-item-id]').length]") == ["deleted", 0]


def test_the_dashboard_keeps_its_panels_when_the_server_is_away_and_shows_reconnecting(page, lib_server):
    for n in range(3):
        lib_server.request("PUT", f"/feeds/away{n}", {"sections": [{"id": "s", "items": [player(f"a{n}", f"Away {n}", n)]}]})
    page.get(f"{lib_server.url}/dashboard.html")
    states = ("return Object.fromEntries([...document.querySelectorAll('[data-panel^=\"away\"]')]"
              ".map(p => [p.dataset.panel, p.querySelector('.status').dataset.state]))")
    wait_for(lambda: page.execute_script(states) == {f"away{n}": "live" for n in range(3)}, message="a live panel per feed")
    # Count the dashboard's GET /feeds from now on (its check every 10 s).
    page.execute_script("""const real = window.fetch; window.listings = 0;
        window.fetch = (url, init) => { if (new URL(String(url), location.href).pathname === '/feeds') window.listings++; return real(url, init); };""")
    lib_server.stop()
    wait_for(lambda: page.execute_script("return window.listings") >= 1, timeout=20, message="a check of GET /feeds while the server is away")
    wait_for(lambda: page.execute_script("return !document.getElementById('notice').hidden"), message="the failed check to be noticed")
    assert page.execute_script("return document.querySelectorAll('[data-panel^=\"away\"] [data-item-id]').length") == 3
    assert "GET /feeds failed" in page.execute_script("return document.getElementById('notice').textContent")
    wait_for(lambda: page.execute_script(states) == {f"away{n}": "reconnecting" for n in range(3)}, message="every panel to show reconnecting")


def test_a_model_cannot_redirect_an_action_through_the_data_attributes_the_library_reads(page, lib_server):
    model = {"target": "victim", "field": "stolen", "id": "other", "kind": "todo", "section": "s2", "error": "", "keep": ""}
    lib_server.request("PUT", "/feeds/traps", {"sections": [{"id": "s", "items": [{"id": "t1", "kind": "trap", "model": model}]}]})
    open_page(page, lib_server, [])
    page.execute_script("""
        const template = document.createElement('template');
        template.dataset.kind = 'trap';
        template.innerHTML = `<button class="trap" data-action="goal" data-attr-data-feed="target" data-attr-data-item-field="field"
          data-attr-data-item-id="id" data-attr-data-kind="kind" data-attr-data-section-id="section" data-attr-data-error="error"
          data-attr-data-keep="keep" data-attr-data-stale="error" data-attr-data-item-class="field" data-attr-data-section="section"
          data-attr-data-other="target">Goal</button>`;
        document.body.append(template);
        window.posted = [];
        const real = window.fetch;
        window.fetch = (url, init) => {
          if (!String(url).includes('/actions/')) return real(url, init);
          window.posted.push([new URL(String(url), location.href).pathname, JSON.parse(init.body)]);
          return Promise.resolve(new Response('{}', {status: 200, headers: {'Content-Type': 'application/json'}}));
        };
        const container = document.createElement('div');
        container.className = 'region';
        document.body.append(container);
        window.lib.render(container, 'traps');""")
    wait_for(lambda: page.execute_script("return document.querySelector('button.trap') !== null"), message="the item")
    attributes = page.execute_script("return [...document.querySelector('button.trap').attributes].map(a => a.name).filter(n => !n.startsWith('data-attr-'))")
    assert sorted(attributes) == ["class", "data-action", "data-other"]
    click_when_still(page, "button.trap")
    wait_for(lambda: page.execute_script("return window.posted.length") == 1, message="the action to be posted")
    assert page.execute_script("return window.posted") == [["/feeds/traps/actions/goal", {"item": "t1"}]]


def test_the_section_hook_gets_the_same_context_as_item_hooks(page, lib_server):
    lib_server.request("PUT", "/feeds/hooked", {"sections": [{"id": "s1", "model": {"title": "One"}, "items": [player("h1", "Hook", 1)]}]})
    open_page(page, lib_server, [])
    page.execute_script("""
        window.sectionCalls = []; window.itemCalls = [];
        const container = document.createElement('div');
        document.body.append(container);
        const keys = (context) => Object.keys(context).sort();
        window.hooked = window.lib.render(container, 'hooked', {
          sectionHook: (element, section, context) => window.sectionCalls.push({keys: keys(context), created: context.created,
            feed: context.feed, section: context.section, title: section.model.title,
            region: typeof context.region === 'object' && context.region !== null, element: element.dataset.sectionId}),
          hooks: {player: (element, item, context) => window.itemCalls.push(keys(context))},
        });""")
    wait_for(lambda: page.execute_script("return window.sectionCalls.length") == 1, message="the section hook")
    lib_server.request("PUT", "/feeds/hooked", {"sections": [{"id": "s1", "model": {"title": "Two"}, "items": [player("h1", "Hook", 1)]}]})
    wait_for(lambda: page.execute_script("return window.sectionCalls.length") == 2, message="the section hook after a change")
    calls = page.execute_script("return window.sectionCalls")
    expected = {"keys": ["created", "feed", "region", "section"], "feed": "hooked", "section": "s1", "region": True, "element": "s1"}
    assert calls == [{**expected, "created": True, "title": "One"}, {**expected, "created": False, "title": "Two"}]
    assert page.execute_script("return window.itemCalls[0]") == calls[0]["keys"]


def test_a_text_field_gets_the_models_latest_value_when_it_is_left(page, lib_server):
    lib_server.request("PUT", "/feeds/notes", {"sections": [{"id": "s", "items": [{"id": "n1", "kind": "note", "model": {"text": "one"}}]}]})
    open_page(page, lib_server, [])
    page.execute_script("""
        const template = document.createElement('template');
        template.dataset.kind = 'note';
        template.innerHTML = '<input class="text" type="text" data-attr-value="text"><button class="other">other</button>';
        document.body.append(template);
        const container = document.createElement('div');
        document.body.append(container);
        window.leftWith = [];
        container.addEventListener('focusout', (event) => window.leftWith.push(event.target.value)); // a page saving on leave
        window.notes = window.lib.render(container, 'notes');""")
    wait_for(lambda: page.execute_script("return document.querySelector('input.text') !== null"), message="the note")
    field = page.find_element("css selector", "input.text")
    field.click()
    field.send_keys("X")
    assert page.execute_script("return document.querySelector('input.text').value") == "oneX"
    lib_server.request("PUT", "/feeds/notes", {"sections": [{"id": "s", "items": [{"id": "n1", "kind": "note", "model": {"text": "two"}}]}]})
    wait_for(lambda: page.execute_script("return window.notes.state.version") == 2, message="the update to arrive")
    assert page.execute_script("return [document.querySelector('input.text').value, document.activeElement.className]") == ["oneX", "text"]
    page.find_element("css selector", "button.other").click()
    wait_for(lambda: page.execute_script("return document.querySelector('input.text').value") == "two", message="the latest value after leaving")
    assert page.execute_script("return window.leftWith") == ["oneX"]
    # Typing without an update meanwhile stays when the field is left.
    field.click()
    field.send_keys("Y")
    page.find_element("css selector", "button.other").click()
    assert page.execute_script("return document.querySelector('input.text').value") == "twoY"


@pytest.mark.parametrize("model, title", [
    ({"title": "Wired", "issue": 7}, "Wired"), ({"name": "Ada"}, "Ada"), ({"text": "A note"}, "A note"), ({"n": 1}, ""),
])
def test_a_kind_without_a_template_reads_as_a_titled_item(page, lib_server, model, title):
    """Issue 37: on a page of one's own (no style sheet of ours), an item of a kind with no template shows
    its kind, its title (from title, name or text) and its model as indented JSON, on separate lines."""
    lib_server.request("PUT", "/feeds/mags", {"sections": [{"id": "s", "model": None, "items": [
        {"id": "m1", "kind": "magazine", "model": model}]}]})
    open_page(page, lib_server, ["mags"])
    wait_for(lambda: page.execute_script("return document.querySelector(\"#region-mags [data-item-id='m1']\") !== null"),
             message="the item to render")
    text = page.execute_script("return document.querySelector(\"#region-mags [data-item-id='m1']\").innerText")
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].strip() == "magazine", lines
    if title:
        assert lines[1].strip() == title, lines
    assert json.dumps(model, indent=2, sort_keys=True).splitlines()[1].strip() in text, text  # the JSON, indented (keys sorted: canonical)


OWN_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><link rel="icon" href="data:,"><title>a page of one's own</title></head>
<body>
  <template data-kind="player"><span class="name" data-text="name"></span> <span class="score" data-text="stats.score"></span></template>
  <div id="region"></div>
  <script type="module">
    import { render } from '/_diffstream/current/diffstream.js';
    render(document.getElementById('region'), 'own');
  </script>
</body>
</html>
"""


def test_a_page_of_ones_own_imports_the_library_from_the_server(page, tmp_path):
    """Issue 37: a page in a folder with no library file in it needs only its one import: the server serves
    the library from the binary (the redirect to the versioned path, then the relative imports there)."""
    (tmp_path / "own.html").write_text(OWN_PAGE)
    page.get_log("browser")  # what earlier tests' pages logged is theirs
    server = Server(public=tmp_path)
    try:
        server.request("PUT", "/feeds/own", {"sections": [{"id": "s", "model": None, "items": [
            player("p1", "Ada", 3), player("p2", "Grace", 5)]}]})
        page.get(f"{server.url}/own.html")
        names = "return [...document.querySelectorAll('#region [data-item-id] .name')].map(e => e.textContent)"
        wait_for(lambda: page.execute_script(names) == ["Ada", "Grace"], message="the page of one's own to render the feed")
        server.request("PUT", "/feeds/own", {"sections": [{"id": "s", "model": None, "items": [player("p2", "Grace", 6)]}]})
        wait_for(lambda: page.execute_script(names) == ["Grace"], message="a batch to reach it")
        errors = [entry for entry in page.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == []
    finally:
        server.stop()
