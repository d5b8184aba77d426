"""The example view models through the API: PATCH /feeds/home, deal, select, and the demo ticker."""
import threading

import pytest

from e2e_helpers import SSEClient, apply_ops, check_minimal, normalised


def media(mid, title, kind="image"):
    return {"id": mid, "type": kind, "title": title, "url": f"/media/{mid}.jpg"}


def expected_home(state):
    """What the home snapshot must look like for a view-model state (the documented rendering rules)."""
    sections = []
    if state["banner"]:
        banner = state["banner"]
        model = {"title": banner["title"], **({"subtitle": banner["subtitle"]} if banner.get("subtitle") else {})}
        sections.append(("banner", [(f"banner-{banner['id']}", "banner", model)]))
    for key in ["suggested", "recommended"]:
        if state[key]:
            sections.append((key, [(f"{key}-{m['id']}", m["type"], {"id": m["id"], "title": m["title"], "url": m["url"]})
                                   for m in state[key]]))
    return sections


def shape(document):
    return [(s["id"], [(i["id"], i["kind"], i["model"]) for i in s["items"]]) for s in document["sections"]]


def test_home_patches_become_single_batches_that_converge(server):
    with SSEClient(server.port, "/feeds/home/events") as client:
        _, document = client.expect_event("snapshot")
        banner = document["sections"][0]
        assert banner["id"] == "banner" and len(banner["items"]) == 1
        state = {"banner": {"id": banner["items"][0]["id"][len("banner-"):], **banner["items"][0]["model"]},
                 "suggested": [], "recommended": []}
        for section in document["sections"]:
            if section["id"] in ("suggested", "recommended"):
                state[section["id"]] = [{"id": i["model"]["id"], "type": i["kind"], "title": i["model"]["title"], "url": i["model"]["url"]}
                                        for i in section["items"]]
        assert shape(document) == expected_home(state)
        patches = [
            {"banner": None},                                                                # deleteSection
            {"suggested": [media("m3", "Desert dunes"), media("x1", "New", "video"), media("m1", "Northern lights")]},  # insert, delete, move
            {"suggested": [media("m3", "Desert dunes (edited)"), media("x1", "New", "image"), media("m1", "Northern lights")]},  # updates
            {"recommendedHeader": {"isFeatured": True}},                                     # updateSection
            {"recommendedHeader": {"title": "Picked for you", "isFeatured": True}},          # updateSection
            {"recommended": [media("m3", "Desert dunes"), media("m5", "Mountain trail", "video")]},
            {"banner": {"id": "b2", "title": "Back", "subtitle": "again"}, "suggested": []},  # insertSection, deleteSection
            {"banner": {"id": "b3", "title": "Other"}},                                      # a new banner item
            {"suggested": [media("s1", "One")], "recommended": []},
            {"recommended": [media("r1", "R")], "suggested": [media("s1", "One"), media("s2", "Two")]},
        ]
        seen_ops = set()
        version = document["version"]
        for patch in patches:
            previous = document
            result = server.ok("PATCH", "/feeds/home", patch)
            assert result["feed"] == "home" and result["version"] == version + 1, result
            _, batch = client.expect_event("batch")
            assert (batch["from"], batch["version"]) == (version, version + 1)
            assert len(batch["ops"]) == result["ops"] > 0
            for key, value in patch.items():
                if key == "banner" and value is not None and state["banner"]:  # objects merge (RFC 7396)
                    state[key] = {k: v for k, v in {**state["banner"], **value}.items() if v is not None}
                elif key != "recommendedHeader":
                    state[key] = value
            document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
            check_minimal(previous, document, batch["ops"])
            assert normalised(document) == normalised(server.get("/feeds/home"))
            assert shape(document) == expected_home(state)
            seen_ops |= {op["op"] for op in batch["ops"]}
            version += 1
        assert {"insert", "delete", "move", "update", "insertSection", "deleteSection", "updateSection"} <= seen_ops
        header = next(s for s in document["sections"] if s["id"] == "recommended")["model"]
        assert header == {"title": "Picked for you", "isFeatured": True}
        assert client.next_event(timeout=0.3) is None, "one batch per PATCH"


def test_a_patch_that_changes_nothing_makes_no_version(server):
    before = server.get("/feeds/home")
    for patch in [{}, {"recommendedHeader": {}}, {"recommendedHeader": {"isFeatured": False}}]:
        result = server.ok("PATCH", "/feeds/home", patch)
        assert result == {"feed": "home", "version": before["version"], "ops": 0}, patch
    assert server.get("/feeds/home") == before


BAD_PATCHES = [
    (b'{"suggested": [{"id": "a", "type": "gif", "title": "t", "url": "u"}]}', 422, "suggested[0].type"),
    (b'{"suggested": [{"id": "a", "type": "image", "title": "t", "url": "u"}, {"id": "b", "type": "image", "title": "t"}]}', 422, "suggested[1].url"),
    (b'{"recommended": [{"id": "a", "type": "image", "title": "t", "url": "u", "extra": 1}]}', 422, "recommended[0].extra"),
    (b'{"recommended": [{"id": "", "type": "image", "title": "t", "url": "u"}]}', 422, "recommended[0].id"),
    (b'{"recommended": [{"id": "a", "type": "image", "title": "t", "url": "u"}, {"id": "a", "type": "video", "title": "t", "url": "u"}]}',
     422, "recommended[1].id"),
    (b'{"suggested": {"id": "a"}}', 422, "suggested"),
    (b'{"suggested": ["a"]}', 422, "suggested[0]"),
    (b'{"colour": "red"}', 422, "colour"),
    (b'{"banner": null, "colour": "red"}', 422, "colour"),
    (b'{"recommendedHeader": {"isFeatured": 1}}', 422, "recommendedHeader.isFeatured"),
    (b'{"recommendedHeader": {"title": ""}}', 422, "recommendedHeader.title"),
    (b'{"recommendedHeader": {"stars": 5}}', 422, "recommendedHeader.stars"),
    (b'{"recommendedHeader": []}', 422, "recommendedHeader"),
    (b'{"banner": {"id": 5}}', 422, "banner.id"),
    (b'{"banner": {"id": "b", "title": 3}}', 422, "banner.title"),
    (b'{"banner": {"id": ""}}', 422, "banner.id"),
    (b'{"banner": {"id": "b", "title": "t", "subtitle": 3}}', 422, "banner.subtitle"),
    (b'{"banner": "text"}', 422, "banner"),
    (b'{"banner": ', 400, "invalid JSON"),
    (b"", 400, "invalid JSON"),
    (b'{"banner": null} x', 400, "invalid JSON"),
]


@pytest.mark.parametrize("body,status,field", BAD_PATCHES, ids=[f"{b[2]}-{b[1]}-{n}" for n, b in enumerate(BAD_PATCHES)])
def test_bad_patches_name_the_field_and_change_nothing(shared_server, body, status, field):
    server = shared_server
    before = server.get("/feeds/home")
    reply = server.http("PATCH", "/feeds/home", body=body)
    assert reply.status == status, reply
    error = reply.json()
    assert set(error) == {"error", "detail"} and field in error["detail"], error
    assert server.get("/feeds/home") == before


def test_a_patch_body_that_is_not_an_object_is_422(server):
    for body in [b"[]", b"null", b'"banner"', b"3"]:
        assert server.http("PATCH", "/feeds/home", body=body).status == 422, body


def test_deal_appends_one_card(server):
    with SSEClient(server.port, "/feeds/blackjack/events") as client:
        _, document = client.expect_event("snapshot")
        assert [s["id"] for s in document["sections"]] == ["hand"] and len(document["sections"][0]["items"]) == 1
        new_hands = 0
        for _ in range(30):
            before = document
            cards_before = [c["id"] for c in before["sections"][0]["items"]]
            result = server.ok("POST", "/feeds/blackjack/actions/deal")
            _, batch = client.expect_event("batch")
            assert result["version"] == batch["version"] and result["ops"] == len(batch["ops"])
            document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
            assert normalised(document) == normalised(server.get("/feeds/blackjack"))
            inserts = [op for op in batch["ops"] if op["op"] == "insert"]
            assert len(inserts) == 1 and inserts[0]["before"] is None and inserts[0]["section"] == "hand", batch["ops"]
            assert inserts[0]["item"]["kind"] == "card"
            updates = [op for op in batch["ops"] if op["op"] == "updateSection"]
            assert len(updates) == 1 and updates[0]["section"] == "hand"
            model = updates[0]["model"]
            cards = document["sections"][0]["items"]
            ids = [c["id"] for c in cards]
            assert len(ids) == len(set(ids))
            if before["sections"][0]["model"]["score"] >= 21:  # a new hand from a new deck
                new_hands += 1
                assert len(cards) == 1 and {op["op"] for op in batch["ops"]} == {"delete", "insert", "updateSection"}
                assert sorted(op["item"] for op in batch["ops"] if op["op"] == "delete") == sorted(cards_before)
            else:
                assert ids[:-1] == cards_before and len(batch["ops"]) == 2
            assert model["remaining"] == 52 - len(cards)
            score = sum(c["model"]["value"] for c in cards)
            aces = sum(1 for c in cards if c["model"]["rank"] == "A")
            while score > 21 and aces:
                score, aces = score - 10, aces - 1
            assert model["score"] == score
            assert model["status"] == ("bust" if score > 21 else "blackjack" if score == 21 else "playing")
        assert new_hands >= 1, "30 cards always finish at least one hand"


def test_concurrent_actions_each_report_their_own_version(server):
    """Each deal makes exactly one new version, so concurrent deals must report distinct versions."""
    start = server.get("/feeds/blackjack")["version"]
    results = []
    lock = threading.Lock()

    def deal():
        result = server.ok("POST", "/feeds/blackjack/actions/deal")
        with lock:
            results.append(result["version"])

    threads = [threading.Thread(target=deal) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert server.get("/feeds/blackjack")["version"] == start + 24
    assert sorted(results) == list(range(start + 1, start + 25)), f"reported versions: {sorted(results)}"


def hours(document):
    return {i["id"]: i["model"] for s in document["sections"] if s["id"] == "hourly" for i in s["items"]}


@pytest.mark.parametrize("day", ["d-tue", "d-wed", "d-fri"])
def test_select_updates_the_daily_flags_and_only_the_hours_that_differ(server, day):
    with SSEClient(server.port, "/feeds/forecast/events") as client:
        _, before = client.expect_event("snapshot")
        daily_before = {i["id"]: i["model"] for s in before["sections"] if s["id"] == "daily" for i in s["items"]}
        assert [d for d, m in daily_before.items() if m["selected"]] == ["d-mon"]
        result = server.ok("POST", "/feeds/forecast/actions/select", {"day": day})
        _, batch = client.expect_event("batch")
        after = server.get("/feeds/forecast")
        assert result["version"] == batch["version"] == after["version"] and result["ops"] == len(batch["ops"])
        assert normalised(apply_ops(before, batch["ops"])) == normalised(after)
        check_minimal(before, after, batch["ops"])
        # The daily list: exactly two updates, the old and the new selection.
        daily_updates = {op["item"]: op["model"]["selected"] for op in batch["ops"] if op["op"] == "update" and op["item"].startswith("d-")}
        assert daily_updates == {"d-mon": False, day: True}
        # The hourly list: updates exactly for the hours whose temp or icon differ; no other op touches an hour.
        old, new = hours(before), hours(after)
        assert set(old) == set(new), "hours keep their identity"
        differing = {h for h in new if (old[h]["temp"], old[h]["icon"]) != (new[h]["temp"], new[h]["icon"])}
        assert differing and differing != set(new), "the sample shares some hours between days"
        hour_ops = [op for op in batch["ops"] if str(op.get("item", "")).startswith("h-")]
        assert all(op["op"] == "update" for op in hour_ops), hour_ops
        assert {op["item"] for op in hour_ops} == differing
        assert {op["op"] for op in batch["ops"]} <= {"update", "updateSection"}
        # Selecting it again changes nothing.
        assert server.ok("POST", "/feeds/forecast/actions/select", {"day": day}) == {"feed": "forecast", "version": after["version"], "ops": 0}
        assert client.next_event(timeout=0.3) is None


@pytest.mark.parametrize("body,status", [(b'{"day":"d-nope"}', 422), (b'{"day":3}', 422), (b"{}", 422), (b'{"day":', 400), (b"", 422)])
def test_bad_selections(shared_server, body, status):
    server = shared_server
    before = server.get("/feeds/forecast")
    reply = server.http("POST", "/feeds/forecast/actions/select", body=body)
    assert reply.status == status and set(reply.json()) == {"error", "detail"}
    if status == 422:
        assert "day" in reply.json()["detail"]
    assert server.get("/feeds/forecast") == before


def test_demo_changes_home_and_week_by_itself(start):
    server = start("--demo")
    with SSEClient(server.port, "/feeds/home/events") as home, SSEClient(server.port, "/feeds/week/events") as week:
        _, home_doc = home.expect_event("snapshot")
        _, week_doc = week.expect_event("snapshot")
        for _ in range(2):
            _, batch = home.expect_event("batch", timeout=5)  # the home ticker runs every 2 s
            home_doc = apply_ops(home_doc, batch["ops"])
        _, batch = week.expect_event("batch", timeout=6)  # the week ticker every 3 s
        assert batch["ops"] and {op["op"] for op in batch["ops"]} == {"update"}
        apply_ops(week_doc, batch["ops"])
