"""A home feed for every user (issue 38): the example family `home.<user>`, made on first use, bound to
its users' tokens, dropped when idle, listed once, counted in /metrics."""
import concurrent.futures
import json
import os
import random
import shutil
import sqlite3
import statistics
import threading
import time

import pytest

from e2e_helpers import JWT_SECRET, AckingWriter, SSEClient, jwt_token, rights, wait_until

# These tests choose their store themselves (in memory, or a --data directory of their own), so they run
# once, not again in the suite's --data and --redis passes (scripts/test.sh); families under --redis, with
# two instances on one redis-server, are checks/e2e/test_redis_families.py's.

ADMIN = "admin-token-for-families"


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "jwt-secret"
    path.write_text(JWT_SECRET + "\n")
    return path


def user_token(sub):
    return jwt_token(rights() | {"sub": sub})


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def section_title(document, section_id):
    return next(section["model"]["title"] for section in document["sections"] if section["id"] == section_id)


def banner_title(document):
    banner = next(section for section in document["sections"] if section["id"] == "banner")
    return banner["items"][0]["model"]["title"]


def test_two_hundred_users_each_follow_their_own_home_feed(start, secret_file):
    server = start("--data", "none", "--jwt-secret-file", secret_file, "--bound-families", "home", "--token", ADMIN)
    users = [f"user{index:03d}" for index in range(200)]
    clients = []
    try:
        for user in users:
            clients.append(SSEClient(server.port, f"/feeds/home.{user}/events", headers=bearer(user_token(user)), timeout=30))
        for user, client in zip(users, clients):
            assert client.status == 200, client.head
            _, data = client.expect_event("snapshot", timeout=30)
            assert data["feed"] == f"home.{user}"
            assert banner_title(data) == f"Welcome back, {user.capitalize()}"
        metrics = server.metrics()
        assert metrics['diffstream_family_live{family="home"}'] == 200
        assert metrics['diffstream_family_made_total{family="home"}'] == 200

        # A change to one user's feed reaches that user only.
        alice, bob = clients[0], clients[1]
        reply = server.http("PATCH", f"/feeds/home.{users[0]}", json_body={"banner": {"id": "news", "title": "Hello only you"}},
                            headers=bearer(user_token(users[0])))
        assert reply.status == 200, reply.body
        _, batch = alice.expect_event("batch")
        assert batch["feed"] == f"home.{users[0]}" and batch["ops"]
        assert banner_title(server.ok("GET", f"/feeds/home.{users[1]}", headers=bearer(user_token(users[1])))) == "Welcome back, User001"
        # Bob's stream got nothing of it: its next event is the batch of Bob's own change.
        reply = server.http("PATCH", f"/feeds/home.{users[1]}", json_body={"recommendedHeader": {"title": "Bob's"}},
                            headers=bearer(user_token(users[1])))
        assert reply.status == 200, reply.body
        fields, batch = bob.expect_event("batch")
        assert batch["feed"] == f"home.{users[1]}" and fields["id"].endswith(".2")
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("token, status", [
    ("bob", 403),   # another user's token
    (None, 401),    # no token
    ("admin", 200),
    ("alice", 200),
])
def test_a_bound_member_is_its_users_only(start, secret_file, token, status):
    server = start("--jwt-secret-file", secret_file, "--bound-families", "home", "--token", ADMIN)
    headers = {} if token is None else bearer(ADMIN if token == "admin" else user_token(token))
    for method, path, body in [("GET", "/feeds/home.alice", None), ("GET", "/feeds/home.alice/events", None),
                               ("PATCH", "/feeds/home.alice", {"recommendedHeader": {"title": "Mine"}})]:
        if path.endswith("/events") and status == 200:
            with SSEClient(server.port, path, headers=headers) as client:
                assert client.status == 200
                client.expect_event("snapshot")
            continue
        reply = server.http(method, path, json_body=body, headers=headers)
        assert reply.status == status, (method, path, reply.body)
    # Refused whether or not the member exists: nothing was made for a refused request.
    if status in (401, 403):
        assert server.metrics()['diffstream_family_made_total{family="home"}'] == 0


def test_the_family_is_listed_once_beside_the_shared_home_feed(start):
    server = start("--data", "none")
    for user in ["alice", "bob"]:
        assert server.get(f"/feeds/home.{user}")["feed"] == f"home.{user}"
    listing = server.get("/feeds")
    names = [entry["feed"] for entry in listing]
    assert "home" in names, "the shared home feed stays"
    assert not any(name.startswith("home.") and name != "home.*" for name in names), names
    family = next(entry for entry in listing if entry["kind"] == "family")
    assert family == {"feed": "home.*", "kind": "family", "family": "home", "live": 2, "patch": True, "actions": []}
    # The shared feed takes PATCH as before, and is not a member.
    assert server.http("PATCH", "/feeds/home", json_body={"recommendedHeader": {"title": "Shared"}}).status == 200


def test_an_idle_member_is_dropped_and_made_again(start):
    server = start("--data", "none", "--family-idle", "0.2")
    with SSEClient(server.port, "/feeds/home.carol/events") as client:
        _, first = client.expect_event("snapshot")
        # Kept while it has a subscriber, however long that is: dropped counts nothing yet while the
        # idle time passes for another member.
        server.get("/feeds/home.dave")
        wait_until(lambda: server.metrics().get('diffstream_family_dropped_total{family="home"}', 0) >= 1,
                   message="dave dropped")
        assert server.metrics()['diffstream_family_live{family="home"}'] == 1
    wait_until(lambda: server.metrics()['diffstream_family_live{family="home"}'] == 0, message="carol dropped once her stream ended")
    again = server.get("/feeds/home.carol")
    assert banner_title(again) == banner_title(first)
    # In memory (no store for members), a member made again starts a new history.
    assert again["history"] != first["history"] and again["version"] == 1
    assert server.metrics()['diffstream_family_made_total{family="home"}'] == 3


def test_member_names_must_be_valid_and_put_is_refused(start):
    server = start("--data", "none")
    assert server.http("PUT", "/feeds/home.zed", json_body={"sections": []}).status == 409
    assert server.http("DELETE", "/feeds/home.zed").status == 409
    assert server.http("GET", "/feeds/home.").status == 404
    reply = server.http("GET", "/feeds/home..x")
    assert reply.status in (200, 404)
    json.loads(reply.body)


def drop_all(server, made):
    """Waits until every member made so far was dropped."""
    wait_until(lambda: server.metrics()['diffstream_family_dropped_total{family="home"}'] >= made, timeout=30,
               message=f"{made} members dropped")


def test_a_dropped_member_resumes_with_only_the_batch_of_what_changed(start, tmp_path):
    server = start("--data", tmp_path / "data", "--family-idle", "0.2")
    with SSEClient(server.port, "/feeds/home.erin/events") as client:
        _, first = client.expect_event("snapshot")
        reply = server.http("PATCH", "/feeds/home.erin", json_body={"banner": {"id": "note", "title": "A note for Erin"}})
        assert reply.status == 200
        fields, _ = client.expect_event("batch")
        last_id = fields["id"]
    drop_all(server, 1)
    # Made again: the state kept (truth .kept, issue 52), so the PATCH is there and nothing changed; the
    # same history goes on, and the next change reaches the resuming client as one batch.
    document = server.get("/feeds/home.erin")
    assert banner_title(document) == "A note for Erin" and document["version"] == 2
    with SSEClient(server.port, "/feeds/home.erin/events", headers={"Last-Event-ID": last_id}) as client:
        server.ok("PATCH", "/feeds/home.erin", {"recommendedHeader": {"title": "Erin's"}})
        fields, batch = client.expect_event("batch")
        assert batch["history"] == first["history"] and batch["from"] == 2 and batch["version"] == 3
        assert fields["id"] == f"ds1.{first['history']}.3"


def test_a_restart_brings_back_kept_members(start, tmp_path):
    data = tmp_path / "data"
    server = start("--data", data)
    before = server.get("/feeds/home.fay")
    server.stop()
    again = start("--data", data)
    after = again.get("/feeds/home.fay")
    assert (after["history"], after["version"]) == (before["history"], before["version"])
    assert again.metrics()['diffstream_family_made_total{family="home"}'] == 1


def files_under(directory):
    """The bytes of every regular file under `directory`: the log's, and the members' store in members/."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def test_kept_members_count_against_max_store_bytes_live_or_not(start, tmp_path):
    """Issue 38: kept members' bytes count against --max-store-bytes, also when no member is live (after a
    restart), and the members' files on disk are in diffstream_store_size_bytes. Past the limit, a new
    member gets the store's 507 naming the limit, and nothing is made."""
    data = tmp_path / "data"
    server = start("--data", data, "--examples", "home")
    base = server.metrics()["diffstream_store_bytes"]
    server.get("/feeds/home.m0")
    member = server.metrics()["diffstream_store_bytes"] - base  # one member's row: snapshot, window, state
    assert member > 500, member
    server.stop()

    limit = int(base + 3.25 * member)  # three members fit, a fourth does not
    server = start("--data", data, "--examples", "home", "--max-store-bytes", limit, "--family-idle", "0.2")
    assert server.metrics()["diffstream_store_bytes"] == base + member  # home.m0, kept, not live
    for key in ("m1", "m2"):
        assert server.http("GET", f"/feeds/home.{key}").status == 200
    reply = server.http("GET", "/feeds/home.m3")
    assert reply.status == 507, reply
    assert reply.json()["limit"] == "max-store-bytes" and reply.json()["value"] == limit
    assert server.metrics()['diffstream_storage_refusals_total{limit="max-store-bytes"}'] == 1
    # The members dropped as idle stay counted: they are kept on disk.
    wait_until(lambda: server.metrics()['diffstream_family_live{family="home"}'] == 0, message="the members dropped")
    metrics = server.metrics()
    assert base + 3 * member - 100 <= metrics["diffstream_store_bytes"] <= base + 3 * member + 100, (metrics["diffstream_store_bytes"], base, member)
    assert server.http("GET", "/feeds/home.m3").status == 507
    # The size on disk is every file of the data directory, the members' store (with its WAL) included.
    wait_until(lambda: server.metrics()["diffstream_store_size_bytes"] == files_under(data),
               message="diffstream_store_size_bytes to match the files under the data directory")
    assert (data / "members" / "members.sqlite3-wal").exists()
    server.stop()

    server = start("--data", data, "--examples", "home", "--max-store-bytes", limit)
    assert server.metrics()["diffstream_store_bytes"] == metrics["diffstream_store_bytes"]  # counted at start, none live
    assert server.http("GET", "/feeds/home.m3").status == 507
    assert server.get("/feeds/home.m1")["feed"] == "home.m1"  # a kept member is made again: it adds nothing
    assert server.metrics()['diffstream_family_made_total{family="home"}'] == 1


MEMBER_CRASH_CYCLES = int(os.environ.get("MEMBER_CRASH_CYCLES", "8"))
MEMBER_CRASH_SEED = int(os.environ.get("MEMBER_CRASH_SEED", random.randrange(1 << 30)))


class MemberWriter(AckingWriter):
    """PATCHes its member's recommended header to `t<n>` until the server dies; the token of a write is
    the title."""

    def __init__(self, port, key, start_at, on_ack):
        super().__init__(port, None, on_ack, ok=(200,))
        self.key, self.counter = key, start_at

    def next_write(self):
        self.counter += 1
        title = f"{self.key} t{self.counter}"
        return "PATCH", f"/feeds/home.{self.key}", json.dumps({"recommendedHeader": {"title": title}}), title


def kept_rows(data, scratch):
    """The members' rows as the file holds them after the crash, read from a copy of the database and its
    WAL (SQLite recovers the WAL in the copy; the server's files stay as the crash left them)."""
    scratch.mkdir(exist_ok=True)
    for name in ("members.sqlite3", "members.sqlite3-wal"):
        source = data / "members" / name
        target = scratch / name
        target.unlink(missing_ok=True)
        if source.exists():
            shutil.copyfile(source, target)
    database = sqlite3.connect(scratch / "members.sqlite3")
    try:
        assert database.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = {name: (history, version, json.loads(state)) for name, history, version, state
                in database.execute("SELECT name, history, version, view_state FROM members")}
        totals = database.execute("SELECT members, bytes FROM totals").fetchone()
        computed = database.execute("SELECT COUNT(*), COALESCE(SUM(length(snapshot) + length(batches) + COALESCE(length(view_state), 0)), 0) FROM members").fetchone()
        assert totals == computed, (totals, computed)  # the running totals were committed with the rows
        return rows
    finally:
        database.close()


def test_kill_9_after_acknowledged_member_writes_loses_none_and_the_store_opens_again(start, tmp_path):
    """The members' store through kill -9 (issue 38; docs/member-store.md, "Durability"): members written
    by concurrent PATCHes, the server killed right after an acknowledged write, again and again. After
    each kill the file holds every acknowledged write (its version and state; or the one in flight, one
    version on) with the member's history, its totals agree with its rows, and it opens again: the server
    serves each member on the same history, and a client resuming from its last acknowledged id gets
    batches, not a snapshot."""
    rng = random.Random(MEMBER_CRASH_SEED)
    data = tmp_path / "data"
    keys = ["k0", "k1", "k2", "k3"]
    acked = {key: None for key in keys}
    histories = {}
    counters = {key: 0 for key in keys}
    for cycle in range(MEMBER_CRASH_CYCLES):
        context = f"seed {MEMBER_CRASH_SEED}, cycle {cycle}"
        server = start("--data", data, "--examples", "home")
        for key in keys:
            document = server.get(f"/feeds/home.{key}")  # made again from what was kept (or first made)
            history = histories.setdefault(key, document["history"])
            assert document["history"] == history, f"home.{key}: a new history after kill -9 ({context})"
            if acked[key]:
                version = acked[key][0]
                assert document["version"] in (version, version + 1), (key, document["version"], acked[key], context)
                if document["version"] > version:  # the loader's render diffed against the kept one: a batch
                    with SSEClient(server.port, f"/feeds/home.{key}/events", headers={"Last-Event-ID": f"ds1.{history}.{version}"}) as client:
                        _, event = client.expect_event("batch")
                        assert event["from"] == version and event["history"] == history, (key, event, context)
            acked[key] = (document["version"], section_title(document, "recommended"))  # served: kept from now on
        target = rng.randint(1, 30)
        count = [0]
        enough = threading.Condition()

        def on_ack():
            with enough:
                count[0] += 1
                if count[0] >= target:
                    server.kill()  # right after an acknowledged write (others may be in flight)
                enough.notify_all()

        writers = {key: MemberWriter(server.port, key, counters[key], on_ack) for key in keys}
        for writer in writers.values():
            writer.start()
        with enough:
            assert enough.wait_for(lambda: count[0] >= target, timeout=30), f"writes stalled ({context})"
        for writer in writers.values():
            writer.join(15)
            assert not writer.is_alive(), f"a writer outlived the server ({context})"
        server.kill()  # already dead: reaps it
        rows = kept_rows(data, tmp_path / "copy")
        for key, writer in writers.items():
            counters[key] = writer.counter
            if writer.acked:
                acked[key] = writer.acked
            if acked[key] is None:
                continue
            history, version, state = rows[f"home.{key}"]
            title = state["recommendedHeader"]["title"]
            assert history == histories[key], f"home.{key}: the kept history changed ({context})"
            acked_version, acked_title = acked[key]
            if version == acked_version:
                assert title == acked_title, (key, title, acked[key], context)
            else:  # only the PATCH whose answer was lost may follow the acknowledged one
                assert (version, title) == (acked_version + 1, writer.inflight), (key, version, title, acked[key], writer.inflight, context)
                acked[key] = (version, title)
    server = start("--data", data, "--examples", "home")
    for key in keys:
        assert server.get(f"/feeds/home.{key}")["history"] == histories[key]


def started_in(start, data):
    began = time.monotonic()
    server = start("--data", data)
    seconds = time.monotonic() - began
    rss = server.rss_kib()
    server.stop()
    return seconds, rss


def test_ten_thousand_kept_members_start_like_an_empty_store_and_stay_on_disk(start, tmp_path):
    data, empty = tmp_path / "data", tmp_path / "empty"
    server = start("--data", data, "--family-idle", "0.5")
    users = [f"u{index:05d}" for index in range(10_000)]

    def make(user):
        return server.http("GET", f"/feeds/home.{user}").status

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        statuses = list(pool.map(make, users))
    assert statuses == [200] * len(users)
    assert server.metrics()['diffstream_family_made_total{family="home"}'] == 10_000
    server.stop()
    start("--data", empty).stop()  # both directories hold a started store
    # Alternating starts, medians: the kept members are not read at start.
    kept, bare = [], []
    for _ in range(3):
        kept.append(started_in(start, data))
        bare.append(started_in(start, empty))
    kept_seconds, bare_seconds = statistics.median(s for s, _ in kept), statistics.median(s for s, _ in bare)
    kept_rss, bare_rss = statistics.median(r for _, r in kept), statistics.median(r for _, r in bare)
    assert kept_seconds <= 2 * bare_seconds, (kept, bare)
    # Not in memory: 10,000 members at a few KiB each would be tens of MiB.
    assert kept_rss - bare_rss < 8 * 1024, (kept, bare)
    # And each is read back on use.
    last = start("--data", data)
    assert banner_title(last.get("/feeds/home.u09999")) == "Welcome back, U09999"
