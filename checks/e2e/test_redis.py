"""Several instances sharing their feeds through Redis (`--redis`, issue 26), end to end.

Each test starts its own redis-server (AOF, `appendfsync always`) on a free port and its instances with a
fresh `--redis-prefix`. Subscribers (`Follower`) apply every batch to their own copy and record any gap;
writers keep every acknowledged write, and an audit resumes from version 1 to check that each of them is
in the feed's history at the version it was acknowledged with. Skipped when redis-server is missing.

DIFFSTREAM_E2E_REDIS_TIMEOUT (2, the instances' default) sizes the CLIENT PAUSE and DEBUG SLEEP that must
outlast an instance's Redis timeout. The rest of the suite runs in --redis mode with DIFFSTREAM_E2E_REDIS=1
(`e2e_redis_flags` in e2e_helpers.py: one redis-server for the run, a fresh prefix per server).
"""
import http.client
import json
import os
import random
import re
import signal
import subprocess
import threading
import time
import urllib.parse
import uuid

import pytest

from e2e_helpers import BINARY, SSEClient, apply_ops, clean_environment, free_port, normalised, run_binary, wait_until
from redis_helpers import (Follower, RedisServer, Writers, cluster, new_prefix, random_document,  # noqa: F401 (fixtures)
                           redis, require_redis)

# The instances' timeout on a Redis call (the lead's default); a CLIENT PAUSE must outlast it.
REDIS_TIMEOUT = float(os.environ.get("DIFFSTREAM_E2E_REDIS_TIMEOUT", "2"))
PLAIN = ("--examples", "none")


# ----------------------------------------------------------------------------------------------------
# Helpers


def create(instance, feed, rng):
    """Creates `feed` (version 1) with a random snapshot; returns that snapshot."""
    document = random_document(rng, "first")
    reply = instance.http("PUT", f"/feeds/{feed}", json_body=document)
    assert reply.status == 201 and reply.json()["version"] == 1, f"PUT /feeds/{feed} (new) -> {reply}"
    return document


def acked(writers, feed):
    return [(version, sections) for f, version, sections, _ in writers.acks if f == feed]


def check_acks_distinct(writers, feed):
    versions = [version for version, _ in acked(writers, feed)]
    assert len(versions) == len(set(versions)), f"two acknowledged writes of {feed} claim one version: {sorted(versions)}"
    return versions


def audit(instance, feed, history, first_document, writers, final_version):
    """Resumes from version 1 (within --replay) on `instance`: only batches, contiguous, up to
    `final_version`; every acknowledged write of `feed` is there at its version with its content."""
    auditor = Follower(feed, name=f"audit of {feed} on :{instance.port}", keep=True)
    auditor.seed(history, 1, first_document)
    auditor.connect(instance, auditor.last_id)
    try:
        auditor.wait_version(final_version, timeout=20)
    finally:
        auditor.close()
    assert auditor.snapshot_count() == 0, f"resuming {feed} from version 1 gave a snapshot: {auditor.log[:5]}"
    assert not auditor.errors, auditor.errors
    lost = [version for version, sections in acked(writers, feed) if auditor.docs.get((history, version)) != sections]
    assert not lost, f"acknowledged writes of {feed} missing from (or different in) its history at versions {lost[:10]}"


def converge(followers, instance, feed, version):
    """Waits until every follower of `feed` holds at least `version` (the last acknowledged one), then
    until each holds what `instance` answers to GET (a write whose answer was lost may have landed
    too), and checks that each holds that content, with no gap recorded. Returns the GET body."""
    for follower in followers:
        follower.wait_version(version, timeout=20)
    final = instance.get(f"/feeds/{feed}")
    assert final["version"] >= version, f"GET {feed} on :{instance.port} answers version {final['version']} after {version} was acknowledged"
    for follower in followers:
        follower.wait_version(final["version"], timeout=20)
        assert not follower.errors, follower.describe()
        assert follower.version == final["version"], follower.describe()
        assert normalised(follower.document) == normalised(final), f"{follower.name} holds other content than GET at {final['version']}"
    return final


def settled(instance, path, version, timeout=10.0):
    """GET `path` on `instance` once it shows at least `version` (acknowledged on another instance)."""
    return wait_until(lambda: (lambda body: body if body["version"] >= version else None)(instance.get(path)), timeout=timeout,
                      message=f"GET {path} on :{instance.port} to show version {version}")


def logged(instances, pattern, since=None):
    """The instances whose log, from line since[n] on, has a line matching `pattern`."""
    regex = re.compile(pattern)
    found = []
    for n, instance in enumerate(instances):
        with instance.changed:
            lines = instance.lines[since[n] if since else 0:]
        if any(regex.search(line) for line in lines):
            found.append(instance)
    return found


def readyz(instance):
    reply = instance.http("GET", "/readyz", timeout=5)
    return reply.status, (reply.json() if reply.body else None)


# ----------------------------------------------------------------------------------------------------
# 1, 2. Three instances, one Redis


def test_random_writers_on_three_instances_every_subscriber_converges(cluster):
    instances = cluster.launch(3, *PLAIN)
    rng = random.Random(2601)
    feeds = ["r0", "r1", "r2"]
    for n, feed in enumerate(feeds):
        create(instances[n], feed, rng)
    followers = [cluster.follow(feed, instance, name=f"{feed} on instance {n}")
                 for feed in feeds for n, instance in enumerate(instances)]
    for follower in followers:
        follower.wait_version(1)
    writers = Writers(instances, feeds, threads=3, per_thread=40, seed=1)
    writers.join()
    assert not writers.refusals and not writers.failures, (writers.refusals[:3], writers.failures[:3])
    for feed in feeds:
        mine = [f for f in followers if f.feed == feed]
        assert len({f.history for f in mine}) == 1, f"{feed} has more than one history: {[f.describe() for f in mine]}"
        versions = check_acks_distinct(writers, feed)
        final = converge(mine, instances[0], feed, max(versions, default=1))
        assert final["version"] == max(versions, default=1) == 1 + len(versions), f"{feed}: acks {sorted(versions)}, GET {final['version']}"
        for follower in mine:
            assert follower.snapshot_count() == 1, f"{follower.name}: resyncs with a snapshot (held, got) {follower.resyncs()} where the history had every batch"
        for instance in instances[1:]:
            assert instance.get(f"/feeds/{feed}") == final, f"{feed}: instances disagree"
    for follower in followers:
        follower.close()


def test_concurrent_writers_on_one_feed_every_acknowledged_version_exactly_once(cluster):
    instances = cluster.launch(3, *PLAIN)
    rng = random.Random(2602)
    create(instances[1], "shared", rng)
    followers = [cluster.follow("shared", i, name=f"shared on instance {n}", keep=True) for n, i in enumerate(instances)]
    for follower in followers:
        follower.wait_version(1)
    writers = Writers(instances, ["shared"], threads=6, per_thread=20, seed=2)
    writers.join()
    assert not writers.refusals and not writers.failures, (writers.refusals[:3], writers.failures[:3])
    versions = check_acks_distinct(writers, "shared")
    assert sorted(versions) == list(range(2, 2 + len(versions))), f"acknowledged versions are not 2…{1 + len(versions)}: {sorted(versions)}"
    final = converge(followers, instances[2], "shared", max(versions))
    last_version, last_sections = max(acked(writers, "shared"))
    assert final["version"] == last_version and normalised(final) == last_sections, "GET is not the last acknowledged write"
    for follower in followers:
        missing = [v for v, sections in acked(writers, "shared") if follower.docs.get((follower.history, v)) != sections]
        assert not missing, f"{follower.name}: acknowledged versions missing or different: {missing[:10]}"
        assert follower.snapshot_count() == 1, f"{follower.name}: resyncs with a snapshot (held, got) {follower.resyncs()} where the history had every batch"
        follower.close()


# ----------------------------------------------------------------------------------------------------
# 3. Resume anywhere


def test_an_id_from_instance_a_resumes_on_b_and_c_with_only_the_missed_batches(cluster):
    a, b, c = cluster.launch(3, *PLAIN)
    rng = random.Random(2603)
    document = create(a, "resume", rng)
    with SSEClient(a.port, "/feeds/resume/events") as stream:
        event, snap = stream.expect_event("snapshot")
    history, first_id = snap["history"], event["id"]
    assert first_id == f"ds1.{history}.1"
    documents = {1: document}
    for version in range(2, 6):
        documents[version] = random_document(rng, version)
        assert (b if version % 2 else c).put("resume", documents[version])["version"] == version
    with SSEClient(b.port, "/feeds/resume/events", headers={"Last-Event-ID": first_id}) as stream:
        state = snap
        for version in range(2, 6):
            event, batch = stream.expect_event("batch")  # a snapshot here would fail: only the missed batches
            assert (batch["history"], batch["from"], batch["version"]) == (history, version - 1, version)
            assert event["id"] == f"ds1.{history}.{version}"
            state = apply_ops(state, batch["ops"])
            assert normalised(state) == normalised(documents[version])
        assert stream.next_event(timeout=0.3) is None, "more than the missed batches"
    # The current id, in the query: nothing until the next write (made on a third instance), then its batch.
    current = f"ds1.{history}.5"
    with SSEClient(c.port, f"/feeds/resume/events?lastEventId={urllib.parse.quote(current)}") as stream:
        a.put("resume", random_document(rng, 6))
        event, batch = stream.expect_event("batch")
        assert (batch["history"], batch["from"], batch["version"]) == (history, 5, 6)
    # The multi-feed route, with a position from instance A.
    with SSEClient(c.port, f"/events?feed=resume%40{urllib.parse.quote(first_id)}") as stream:
        versions = [stream.expect_event("batch")[1]["version"] for _ in range(5)]
        assert versions == [2, 3, 4, 5, 6]


# ----------------------------------------------------------------------------------------------------
# 4. kill -9 an instance


def test_kill_9_an_instance_during_a_write_storm_its_subscribers_resume_elsewhere(cluster):
    a, b, c = cluster.launch(3, *PLAIN)
    rng = random.Random(2604)
    first = create(b, "storm", rng)
    on_a = [cluster.follow("storm", a, name=f"storm subscriber {n} of A", keep=True) for n in range(3)]
    on_c = cluster.follow("storm", c, name="storm subscriber of C", keep=True)
    for follower in on_a + [on_c]:
        follower.wait_version(1)
    history = on_c.history
    targets = [a, b, c]
    writers = Writers(lambda: targets, ["storm"], threads=3, seed=4)
    writers.wait_acks(30)
    a.kill()  # SIGKILL
    targets[:] = [b, c]
    for n, follower in enumerate(on_a):
        follower.wait_closed(timeout=5)
        follower.resume([b, c][n % 2])
    at_kill = writers.count()
    writers.wait_acks(at_kill + 30)
    writers.stop()
    final = converge(on_a + [on_c], b, "storm", writers.last_version("storm"))
    for follower in on_a:
        assert follower.snapshot_count() == 1, f"a snapshot after resuming elsewhere: {follower.describe()}"
        missing = [v for v, sections in acked(writers, "storm") if follower.docs.get((history, v)) != sections]
        assert not missing, f"{follower.name}: acknowledged versions missing: {missing[:10]}"
    check_acks_distinct(writers, "storm")
    audit(c, "storm", history, first, writers, final["version"])
    for follower in on_a + [on_c]:
        follower.close()


# ----------------------------------------------------------------------------------------------------
# 5. kill -9 Redis, restart it on its AOF


def documented_outage_refusal(status, body):
    """`503 {"error":"redis unavailable","detail":…}` (docs/protocol.md), the one answer to a write Redis cannot take."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return False
    return status == 503 and parsed.get("error") == "redis unavailable" and bool(parsed.get("detail"))


def test_kill_9_redis_during_a_write_storm_and_restart_it_on_its_aof(cluster):
    a, b = cluster.launch(2, *PLAIN)
    rng = random.Random(2605)
    first = create(a, "outage", rng)
    followers = [cluster.follow("outage", i, name=f"outage on {name}") for name, i in (("A", a), ("B", b))]
    for follower in followers:
        follower.wait_version(1)
    history = followers[0].history
    health_problems, health_stop = [], threading.Event()

    def watch_health():  # /healthz stays 200 all along (liveness, not Redis)
        while not health_stop.is_set():
            for instance in (a, b):
                try:
                    status = instance.http("GET", "/healthz", timeout=5).status
                except Exception as error:  # noqa: BLE001 - any failure to answer is a problem here
                    status = repr(error)
                if status != 200:
                    health_problems.append((instance.port, status))
            health_stop.wait(0.1)
    health = threading.Thread(target=watch_health, daemon=True)
    health.start()

    writers = Writers([a, b], ["outage"], threads=2, seed=5)
    writers.wait_acks(20)
    marks = [f.mark() for f in followers]
    cluster.redis.kill9()
    for follower, mark in zip(followers, marks):
        follower.wait_event("unavailable", since=mark, timeout=10)
    for instance in (a, b):
        reply = instance.http("PUT", "/feeds/outage", json_body=random_document(rng, "during"), timeout=20)
        assert reply.status == 503, f"a write while Redis is down -> {reply}"
        body = reply.json()
        assert body.get("error") == "redis unavailable" and body.get("detail"), f"the 503 is not the documented error: {body}"
        status, ready = wait_until(lambda i=instance: (lambda r: r if r[0] == 503 else None)(readyz(i)), timeout=10,
                                   message="/readyz 503 while Redis is down")
        assert ready.get("status") == "unavailable" and ready.get("redis") not in (None, "ok"), ready
        assert instance.http("GET", "/healthz").status == 200
    # Reads during the outage: a feed the instance holds is its copy; the list of every feed is Redis's.
    assert a.http("GET", "/feeds/outage", timeout=10).status == 200
    listing = a.http("GET", "/feeds", timeout=10)
    assert listing.status == 503 and listing.json().get("error") == "redis unavailable", f"GET /feeds while Redis is down -> {listing}"
    # New subscribers during the outage: a feed the instance holds is served from it, then marked.
    with SSEClient(a.port, "/feeds/outage/events") as late:
        late.expect_event("snapshot")
        _, data = late.expect_event("unavailable")
        assert data["feed"] == "outage" and data.get("detail"), data
    reply = a.http("GET", "/feeds/nosuch/events", timeout=10)
    assert reply.status == 503, f"a stream of a feed the instance does not hold, during the outage -> {reply}"
    with SSEClient(a.port, "/events?feed=outage&feed=nosuch") as late:
        events = [late.next_event(timeout=5) for _ in range(3)]
        summary = [(e.get("event"), json.loads(e["data"])["feed"]) for e in events if e]
        assert summary == [("snapshot", "outage"), ("unavailable", "outage"), ("unavailable", "nosuch")] or \
            summary == [("snapshot", "outage"), ("unavailable", "nosuch"), ("unavailable", "outage")], summary
    writers.wait_refusals(2)
    with writers.changed:
        wrong = [(s, body) for s, body in writers.refusals if not documented_outage_refusal(s, body)]
    assert not wrong, f"writes during the outage answered other than 503 redis unavailable: {wrong[:3]}"
    before_restart = writers.count()

    cluster.redis.start()  # same port, same directory: its AOF
    for instance in (a, b):
        wait_until(lambda i=instance: readyz(i)[0] == 200, timeout=15, message=f"/readyz 200 again on :{instance.port}")
        assert readyz(instance)[1].get("redis") == "ok"
    writers.wait_acks(before_restart + 20, timeout=20)  # the instances recovered by themselves
    for follower, mark in zip(followers, marks):
        follower.wait_event("available", since=mark, timeout=10)
    writers.stop()
    with writers.changed:  # also while the restarted Redis replayed its AOF (`-LOADING`)
        wrong = [(s, body) for s, body in writers.refusals if not documented_outage_refusal(s, body)]
    assert not wrong, f"writes during the outage or the AOF replay answered other than 503 redis unavailable: {wrong[:3]}"
    health_stop.set()
    health.join(10)
    assert not health_problems, f"/healthz was not 200 during the outage: {health_problems[:5]}"
    final = converge(followers, b, "outage", writers.last_version("outage"))
    for follower in followers:
        kinds = follower.kinds(since=marks[followers.index(follower)])
        assert kinds.index("unavailable") < kinds.index("available"), kinds
        assert follower.history == history, f"Redis restarted on its AOF changed the history: {follower.describe()}"
    check_acks_distinct(writers, "outage")
    audit(a, "outage", history, first, writers, final["version"])
    for follower in followers:
        follower.close()


# ----------------------------------------------------------------------------------------------------
# 6. FLUSHALL, and a restart on an intact AOF


def test_flushall_deletes_every_feed_and_a_new_write_starts_a_new_history(cluster):
    a, b = cluster.launch(2, *PLAIN)
    rng = random.Random(2606)
    create(a, "gone", rng)
    b.put("gone", random_document(rng, 2))
    followers = [cluster.follow("gone", i, name=f"gone on {name}") for name, i in (("A", a), ("B", b))]
    for follower in followers:
        follower.wait_version(2)
    old_history, old_id = followers[0].history, followers[0].last_id
    with SSEClient(b.port, "/events?feed=gone") as multi:
        multi.expect_event("snapshot")
        assert cluster.redis.command("FLUSHALL") == "OK"
        for follower in followers:
            follower.wait_event("deleted", timeout=10)  # detected by the position check (every 2 s)
            follower.wait_closed(timeout=5)
        _, data = multi.expect_event("deleted", timeout=10)
        assert data == {"feed": "gone"}
    assert a.http("GET", "/feeds/gone").status == 404, "the feed is still served after Redis lost it"
    reply = b.http("PUT", "/feeds/gone", json_body=random_document(rng, "again"))
    assert reply.status in (200, 201), reply
    new_histories = set()
    for instance in (a, b):
        with SSEClient(instance.port, "/feeds/gone/events", headers={"Last-Event-ID": old_id}) as stream:
            event = stream.next_event(timeout=10)
            assert event is not None and event.get("event") == "snapshot", f"an old id after FLUSHALL gave {event}, not a snapshot"
            data = json.loads(event["data"])
            assert data["history"] != old_history, "the feed written again continues the flushed history"
            new_histories.add(data["history"])
    assert len(new_histories) == 1, f"two instances serve two histories of the new feed: {new_histories}"
    new_history = new_histories.pop()

    # Redis restarted on an intact AOF: the history and its ids stay.
    follower = cluster.follow("gone", a, name="gone on A after the flush")
    follower.wait_version(1)
    version = follower.version
    position = follower.last_id
    a.put("gone", random_document(rng, "before restart"))
    follower.wait_version(version + 1)
    cluster.redis.kill9()
    cluster.redis.start()
    for instance in (a, b):
        wait_until(lambda i=instance: readyz(i)[0] == 200, timeout=15, message="/readyz 200 after the restart")
    with SSEClient(b.port, "/feeds/gone/events", headers={"Last-Event-ID": position}) as stream:
        event = stream.next_event(timeout=10)
        while event is not None and event.get("event") in ("unavailable", "available"):
            event = stream.next_event(timeout=10)  # a notice of the restart, if it reached B late: not what this asserts
        assert event is not None and event.get("event") == "batch", f"not a batch but {event}: the id is still known"
        batch = json.loads(event["data"])
        assert (batch["history"], batch["from"], batch["version"]) == (new_history, version, version + 1)
    b.put("gone", random_document(rng, "after restart"))
    follower.wait_version(version + 2, history=new_history)
    assert not follower.errors, follower.describe()
    histories = {history for kind, history, _, _ in follower.log if kind in ("snapshot", "batch")}
    assert histories == {new_history}, f"Redis restarted on its AOF, and the history changed: {follower.describe()}"
    follower.close()


# ----------------------------------------------------------------------------------------------------
# 7. CLIENT KILL TYPE pubsub


def test_client_kill_type_pubsub_while_writing_gaps_are_filled(cluster):
    instances = cluster.launch(3, *PLAIN)
    rng = random.Random(2607)
    feeds = ["p0", "p1"]
    firsts = {feed: create(instances[0], feed, rng) for feed in feeds}
    followers = [cluster.follow(feed, i, name=f"{feed} on instance {n}", keep=True)
                 for feed in feeds for n, i in enumerate(instances)]
    for follower in followers:
        follower.wait_version(1)
    writers = Writers(instances, feeds, threads=3, seed=7)
    killed = []
    for _ in range(5):
        writers.wait_acks(writers.count() + 12)
        killed.append(cluster.redis.command("CLIENT", "KILL", "TYPE", "pubsub"))
        # A connection made again at once is no outage: Redis is there all along.
        for instance in instances:
            status, body = readyz(instance)
            assert status == 200, f"/readyz after CLIENT KILL TYPE pubsub: {status} {body}"
    writers.wait_acks(writers.count() + 12)
    writers.stop()
    assert killed[0] >= 1, f"no pub/sub connection to kill: {killed}"
    for follower in followers:
        assert "unavailable" not in follower.kinds(), f"an outage told for a pub/sub connection made again: {follower.describe()}"
    for feed in feeds:
        mine = [f for f in followers if f.feed == feed]
        final = converge(mine, instances[1], feed, writers.last_version(feed))
        for follower in mine:
            assert follower.snapshot_count() == 1, f"a resync where filling the gap was possible: {follower.describe()}"
            missing = [v for v, sections in acked(writers, feed) if follower.docs.get((follower.history, v)) != sections]
            assert not missing, f"{follower.name}: acknowledged versions missed: {missing[:10]}"
        check_acks_distinct(writers, feed)
        audit(instances[2], feed, mine[0].history, firsts[feed], writers, final["version"])
    for follower in followers:
        follower.close()


# ----------------------------------------------------------------------------------------------------
# 8. The week example's source on one instance at a time (the lease)


def test_the_week_source_runs_on_one_instance_and_a_stale_holder_is_fenced(cluster):
    instances = cluster.launch(3, "--examples", "week", "--demo")
    followers = {id(i): cluster.follow("week", i, name=f"week on :{i.port}", keep=True) for i in instances}
    first = wait_until(lambda: logged(instances, r"lease week: acquired"), timeout=10, message="'lease week: acquired' on an instance")
    for follower in followers.values():
        follower.wait_version(1)
    watcher = next(followers[id(i)] for i in instances if i is not first[0])
    watcher.wait_version(watcher.version + 1, timeout=8)  # the source ticks every 3 s
    assert logged(instances, r"lease week: acquired") == first, "more than one instance acquired the lease"

    # kill -9 the holder: another takes over within ~6 s and the version keeps increasing.
    holder = first[0]
    holder.kill()
    followers.pop(id(holder)).close()
    rest = [i for i in instances if i is not holder]
    second = wait_until(lambda: logged(rest, r"lease week: acquired"), timeout=12, message="another instance acquiring the lease")
    assert len(second) == 1, "two instances acquired the lease"
    stale = second[0]
    third = next(i for i in rest if i is not stale)
    watcher = followers[id(third)]
    watcher.wait_version(watcher.version + 1, timeout=8)

    # SIGSTOP the holder past the TTL: the third acquires; SIGCONT: the stale one loses it, its commit refused.
    mark_stale, mark_third = stale.mark(), third.mark()
    os.kill(stale.pid, signal.SIGSTOP)
    try:
        third.wait_log(r"lease week: acquired", since=mark_third, timeout=12)
        watcher.wait_version(watcher.version + 1, timeout=8)
    finally:
        os.kill(stale.pid, signal.SIGCONT)
    stale.wait_log(r"lease week: lost", since=mark_stale, timeout=10)
    watcher.wait_version(watcher.version + 2, timeout=12)
    stale_follower = followers[id(stale)]
    stale_follower.wait_version(watcher.version, timeout=10)
    for follower in followers.values():
        assert not follower.errors, follower.describe()  # no gap, no batch continuing a version twice
        versions = [v for kind, _, v, _ in follower.log if kind == "batch"]
        assert versions == sorted(set(versions)), f"{follower.name}: versions repeated or out of order: {versions}"
    common = set(watcher.docs) & set(stale_follower.docs)
    assert common, "the two subscribers share no version"
    assert all(watcher.docs[k] == stale_follower.docs[k] for k in common), "two instances show different content for one version"
    for follower in followers.values():
        follower.close()


# ----------------------------------------------------------------------------------------------------
# 9. Actions exactly once


def todo_titles(instance, version=0):
    state = settled(instance, "/feeds/todo", version)
    return state, [item["model"]["title"] for section in state["sections"] for item in section.get("items") or []]


def add(instance, title, key, timeout=15):
    return instance.http("POST", "/feeds/todo/actions/add", json_body={"title": title}, headers={"Idempotency-Key": key}, timeout=timeout)


def test_todo_actions_run_once_whichever_instance_and_idempotency_keys(cluster):
    instances = cluster.launch(3, "--examples", "todo")
    answers, lock = [], threading.Lock()

    def adder(n):
        for k in range(8):
            title = f"w{n}-{k}"
            reply = add(instances[(n + k) % 3], title, uuid.uuid4().hex)
            with lock:
                answers.append((title, reply.status, reply.body))
    threads = [threading.Thread(target=adder, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(status == 200 for _, status, _ in answers), [a for a in answers if a[1] != 200][:3]
    versions = [json.loads(body)["version"] for _, _, body in answers]
    assert len(set(versions)) == len(versions), f"two actions answered with one version: {sorted(versions)}"
    state, titles = todo_titles(instances[1], max(versions))
    assert sorted(titles) == sorted(title for title, _, _ in answers), "each acknowledged add once, nothing else"
    assert state["version"] == max(versions)

    # A retry with the same key, on another instance: the identical answer, and no second item.
    key = uuid.uuid4().hex
    first = add(instances[0], "retried", key)
    again = add(instances[2], "retried", key)
    assert first.status == 200 and (again.status, again.body) == (first.status, first.body), (first, again)
    state, titles = todo_titles(instances[1], first.json()["version"])
    assert titles.count("retried") == 1 and state["version"] == first.json()["version"]
    # A retry of an action that no longer applies (its item is gone by then): still the first answer.
    retried_id = next(item["id"] for section in state["sections"] for item in section.get("items") or []
                      if item["model"]["title"] == "retried")
    key = uuid.uuid4().hex
    removed = instances[2].http("POST", "/feeds/todo/actions/remove", json_body={"id": retried_id}, headers={"Idempotency-Key": key})
    assert removed.status == 200, removed
    for instance in (instances[0], instances[2]):
        again = instance.http("POST", "/feeds/todo/actions/remove", json_body={"id": retried_id}, headers={"Idempotency-Key": key})
        assert (again.status, again.body) == (removed.status, removed.body), (removed, again)
    # The same key with another action, or the same action with another input, is refused and runs nothing.
    for path, body in (("/feeds/todo/actions/add", {"title": "reused"}), ("/feeds/todo/actions/remove", {"id": retried_id + "x"})):
        reused = instances[1].http("POST", path, json_body=body, headers={"Idempotency-Key": key})
        assert reused.status == 422 and reused.json()["error"] == "idempotency key reused", f"{path} {body} with another action's key -> {reused}"
    assert "reused" not in todo_titles(instances[0])[1]
    for bad in ["has space", "x" * 129, "tab\there", "é"]:
        reply = instances[1].http("POST", "/feeds/todo/actions/add", json_body={"title": "never"},
                                  headers={"Idempotency-Key": bad.encode("utf-8").decode("latin-1")})
        assert reply.status == 400, f"Idempotency-Key {bad!r} -> {reply}"
    assert "never" not in todo_titles(instances[0])[1]

    # A commit whose answer is lost: Redis pauses writes longer than the instance's timeout.
    key, pause_ms = uuid.uuid4().hex, int(REDIS_TIMEOUT * 1000 * 2 + 1000)
    assert cluster.redis.command("CLIENT", "PAUSE", pause_ms, "WRITE") == "OK"
    started = time.monotonic()
    try:
        lost = add(instances[1], "paused", key, timeout=pause_ms / 1000 + 20)
    finally:
        cluster.redis.command("CLIENT", "UNPAUSE")
    assert lost.status in (200, 503), f"an action whose commit timed out -> {lost} after {time.monotonic() - started:.1f} s"
    if lost.status == 503:
        # A write after the pause (a barrier), then the state: a 503 saying the write was not made must be true.
        barrier = add(instances[1], "barrier", uuid.uuid4().hex)
        assert barrier.status == 200, f"a write after the pause -> {barrier}"
        _, titles = todo_titles(instances[1], barrier.json()["version"])
        assert titles.count("paused") <= 1, f"the paused action is in the state {titles.count('paused')} times"
        if "not made" in lost.json().get("detail", ""):
            assert titles.count("paused") == 0, f"answered {lost.body!r}, yet the action is in the state"
    retry = wait_until(lambda: (lambda r: r if r.status != 503 else None)(add(instances[2], "paused", key)), timeout=15,
                       message="the retry with the same Idempotency-Key to be answered (not 503)")
    assert retry.status == 200, retry
    if lost.status == 200:
        assert retry.body == lost.body, f"the retry got another answer than the first: {lost.body!r} / {retry.body!r}"
    _, titles = todo_titles(instances[0], retry.json()["version"])
    assert titles.count("paused") == 1, f"the paused action is in the state {titles.count('paused')} times"


def test_idempotency_keys_on_put_and_delete_and_a_redis_that_hangs(cluster):
    """Each part records its problem and goes on, so one run shows every broken part."""
    a, b, c = cluster.launch(3, *PLAIN)
    rng = random.Random(2611)
    problems = []
    create(a, "keyed", rng)
    x, y = random_document(rng, "x"), random_document(rng, "y")

    # A retry with a write in between: the first answer, and the PUT does not run again.
    key = uuid.uuid4().hex
    first = a.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
    assert first.status == 200 and first.json()["version"] == 2, first
    assert b.put("keyed", y)["version"] == 3
    again = c.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
    if (again.status, again.body) != (first.status, first.body):
        problems.append(f"PUT retried after another write: first {first.status} {first.body!r}, retry {again.status} {again.body!r}")
    state = settled(c, "/feeds/keyed", 3)
    assert state["version"] == 3 and normalised(state) == normalised(y), "the retried PUT ran again"

    # A retry with nothing in between (the feed still holds what the PUT wrote): the first answer too.
    key = uuid.uuid4().hex
    first = a.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
    assert first.status == 200 and first.json()["version"] == 4, first
    for instance in (b, a):
        again = instance.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
        if (again.status, again.body) != (first.status, first.body):
            problems.append(f"PUT retried at once on :{instance.port}: first {first.status} {first.body!r}, retry {again.status} {again.body!r}")

    # The same key on another feed is another request.
    other = b.http("PUT", "/feeds/keyed2", json_body=x, headers={"Idempotency-Key": key})
    assert other.status == 201, f"a key is per feed: {other}"

    # DELETE: a retry after the feed was created again does not delete it again.
    key = uuid.uuid4().hex
    deleted = a.http("DELETE", "/feeds/keyed", headers={"Idempotency-Key": key})
    assert deleted.status == 204, deleted
    assert b.http("PUT", "/feeds/keyed", json_body=x).status == 201
    again = c.http("DELETE", "/feeds/keyed", headers={"Idempotency-Key": key})
    if again.status != 204:
        problems.append(f"DELETE retried: first 204, retry {again.status} {again.body!r}")
    assert settled(a, "/feeds/keyed", 1)["version"] == 1, "the retried DELETE deleted the feed again"

    # Redis hangs (DEBUG SLEEP, longer than the instances' timeout) while a PUT is in flight: the PUT is
    # answered, not left hanging; a retry with its key afterwards agrees with the state.
    key, z = uuid.uuid4().hex, random_document(rng, "z")
    before = settled(a, "/feeds/keyed", 1)["version"]
    asleep = cluster.redis.send("DEBUG", "SLEEP", REDIS_TIMEOUT * 2 + 1, timeout=REDIS_TIMEOUT * 2 + 15)
    try:
        started = time.monotonic()
        hung = b.http("PUT", "/feeds/keyed", json_body=z, headers={"Idempotency-Key": key}, timeout=REDIS_TIMEOUT * 4 + 10)
        took = time.monotonic() - started
    finally:
        assert asleep() == "OK"
    assert hung.status in (200, 503), f"a PUT while Redis hangs -> {hung} after {took:.1f} s"
    if hung.status == 503 and "not made" in hung.json().get("detail", ""):
        assert settled(a, "/feeds/keyed", before)["version"] == before, f"answered {hung.body!r}, yet the write was made"
    retry = wait_until(lambda: (lambda r: r if r.status != 503 else None)(
        c.http("PUT", "/feeds/keyed", json_body=z, headers={"Idempotency-Key": key})), timeout=15,
        message="the retried PUT to be answered (not 503) once Redis is back")
    assert retry.status == 200, retry
    if hung.status == 200 and retry.body != hung.body:
        problems.append(f"PUT answered while Redis hung ({took:.1f} s): {hung.body!r}; its retry: {retry.body!r}")
    assert retry.json()["version"] == before + 1, f"the PUT made more than one version: {before} -> {retry.json()}"
    state = settled(a, "/feeds/keyed", before + 1)
    assert state["version"] == before + 1 and normalised(state) == normalised(z)
    assert not problems, "retries with an Idempotency-Key did not get the first answer:\n" + "\n".join(problems)

    # A key sent again with another request (another body, method or action) is refused, on any
    # instance, and nothing runs; the first request's retry still gets its answer.
    key = uuid.uuid4().hex
    first = a.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
    assert first.status == 200, first
    version = first.json()["version"]
    for instance, method, body in ((b, "PUT", y), (c, "DELETE", None)):
        reused = instance.http(method, "/feeds/keyed", json_body=body, headers={"Idempotency-Key": key})
        assert reused.status == 422 and reused.json()["error"] == "idempotency key reused", f"{method} with a PUT's key -> {reused}"
    assert settled(c, "/feeds/keyed", version)["version"] == version, "a request with a reused key ran"
    again = b.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
    assert (again.status, again.body) == (first.status, first.body), again
    # A key first sent by a DELETE refuses a PUT.
    key = uuid.uuid4().hex
    assert a.http("DELETE", "/feeds/keyed", headers={"Idempotency-Key": key}).status == 204
    reused = b.http("PUT", "/feeds/keyed", json_body=x, headers={"Idempotency-Key": key})
    assert reused.status == 422, f"a PUT with a DELETE's key -> {reused}"
    assert a.http("GET", "/feeds/keyed").status == 404, "the PUT with a DELETE's key ran"


def test_readyz_without_redis(start):
    server = start(*PLAIN)
    if "--redis" in server.args:  # the suite run in --redis mode (DIFFSTREAM_E2E_REDIS=1)
        pytest.skip("this server runs with --redis")
    reply = server.http("GET", "/readyz")
    assert reply.status == 200 and reply.json() == {"status": "ready"}, reply


# ----------------------------------------------------------------------------------------------------
# Checks at start: settings kept in Redis, an evicting maxmemory-policy, a weak appendfsync


def exits(*args, timeout=15, env=None):
    """Runs diffstream expecting it to exit by itself; a failure (not a hang) if it is still serving."""
    try:
        return run_binary(*args, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"diffstream {' '.join(map(str, args))}: still running after {timeout} s (expected it to exit 2)")


def test_start_checks_settings_eviction_and_appendfsync(cluster):
    cluster.add(*PLAIN, "--replay", "100")
    other = exits("--port", "0", *PLAIN, *cluster.flags(), "--replay", "200")
    assert other.returncode == 2 and "100" in other.stderr and "200" in other.stderr and "replay" in other.stderr, \
        f"an instance with another --replay on the same Redis: exit {other.returncode}, {other.stderr!r}"
    same = cluster.add(*PLAIN, "--replay", "100")  # the same values: it starts
    assert same.alive()
    # Once no instance runs (both stopped), the next start's settings are taken, and then held.
    for instance in cluster.instances:
        instance.stop()
    changed = cluster.add(*PLAIN, "--replay", "200")
    assert changed.alive()
    old = exits("--port", "0", *PLAIN, *cluster.flags(), "--replay", "100")
    assert old.returncode == 2 and "replay" in old.stderr, f"--replay 100 beside a running --replay 200: exit {old.returncode}, {old.stderr!r}"

    # A password Redis refuses stops the start (exit 2), rather than being retried as unreachable.
    refused = exits("--port", "0", *PLAIN, "--redis", cluster.redis.url.replace("redis://", "redis://:wrong@"), "--redis-prefix", new_prefix())
    assert refused.returncode == 2 and "AUTH" in refused.stderr, f"a refused password: exit {refused.returncode}, {refused.stderr!r}"
    # A prefix in Redis's usual style (with ':') names the keys; one with a space does not start.
    colon = cluster.start(*PLAIN, "--redis", cluster.redis.url, "--redis-prefix", f"app:{new_prefix()}")
    assert colon.http("PUT", "/feeds/x", json_body={"sections": []}).status == 201
    spaced = exits("--port", "0", *PLAIN, "--redis", cluster.redis.url, "--redis-prefix", "my app")
    assert spaced.returncode == 2 and "--redis-prefix" in spaced.stderr, f"a prefix with a space: exit {spaced.returncode}, {spaced.stderr!r}"

    assert cluster.redis.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == "OK"
    try:
        evicting = exits("--port", "0", *PLAIN, "--redis", cluster.redis.url, "--redis-prefix", new_prefix())
    finally:
        cluster.redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
    assert evicting.returncode == 2 and "maxmemory-policy" in evicting.stderr, \
        f"an evicting maxmemory-policy: exit {evicting.returncode}, {evicting.stderr!r}"

    assert cluster.redis.command("CONFIG", "SET", "appendfsync", "everysec") == "OK"
    try:
        weak = cluster.start(*PLAIN, "--redis", cluster.redis.url, "--redis-prefix", new_prefix())
        line = weak.wait_log(r"appendfsync", timeout=5)
        assert "warning" in line.string, line.string
    finally:
        cluster.redis.command("CONFIG", "SET", "appendfsync", "always")

    # A managed Redis that forbids CONFIG (here an ACL user without it): a warning, and the start goes on.
    user = f"managed{random.randrange(10**6)}"
    assert cluster.redis.command("ACL", "SETUSER", user, "on", ">managed-password", "~*", "&*", "+@all", "-config") == "OK"
    try:
        managed_url = cluster.redis.url.replace("redis://", f"redis://{user}:managed-password@")
        managed = cluster.start(*PLAIN, "--redis", managed_url, "--redis-prefix", new_prefix())
        line = managed.wait_log(r"CONFIG", timeout=5)
        assert "warning" in line.string and "refused" in line.string, line.string
        assert managed.http("PUT", "/feeds/x", json_body={"sections": []}).status == 201
    finally:
        cluster.redis.command("ACL", "DELUSER", user)


def test_a_namespace_written_with_a_newer_key_schema_is_refused_at_start(cluster):
    """Issue 51, item 5: `<prefix>:schema`, outside the versioned keys, holds the key schema; the first
    start writes it, and a start that finds a newer one stops with one line (exit 2) instead of serving an
    empty namespace of its own. With the marker back at 1, the start goes on and the feeds are there."""
    marker = f"{cluster.prefix}:schema"
    first = cluster.add(*PLAIN)
    assert cluster.redis.command("GET", marker) == "1", "the first start writes the marker"
    assert first.http("PUT", "/feeds/kept", json_body={"sections": []}).status == 201
    first.stop()
    assert cluster.redis.command("SET", marker, "99") == "OK"
    refused = exits("--port", "0", *PLAIN, *cluster.flags())
    lines = [line for line in refused.stderr.splitlines() if marker in line]
    assert refused.returncode == 2 and len(lines) == 1 and "key schema 99" in lines[0] and "key schema 1" in lines[0], \
        f"a start on a namespace of key schema 99: exit {refused.returncode}, {refused.stderr!r}"
    assert cluster.redis.command("GET", marker) == "99", "a refused start leaves the marker as it found it"
    assert cluster.redis.command("SET", marker, "1") == "OK"
    again = cluster.add(*PLAIN)
    assert again.get("/feeds/kept")["version"] == 1, "the feeds written before are there"


def test_limits_count_the_shared_data_and_data_directories_are_not_opened(cluster, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    a = cluster.add(*PLAIN, "--max-feeds", "2", "--data", data)
    b = cluster.add(*PLAIN, "--max-feeds", "2", "--data", data)  # the same directory: no lock is taken
    assert a.alive() and b.alive()
    assert list(data.iterdir()) == [], f"--data was opened in --redis mode: {list(data.iterdir())}"
    rng = random.Random(2612)
    create(a, "one", rng)
    create(b, "two", rng)
    reply = a.http("PUT", "/feeds/three", json_body=random_document(rng, 3))
    assert reply.status == 507 and reply.json().get("limit") == "max-feeds", \
        f"a third feed with --max-feeds 2, the other two made on two instances -> {reply}"
    assert b.http("DELETE", "/feeds/two").status == 204
    assert a.http("PUT", "/feeds/three", json_body=random_document(rng, 3)).status == 201, "deleting on another instance made no room"


def test_readyz_reports_pubsub_refused_while_commands_work(cluster):
    """Commands answer but SUBSCRIBE is refused (an ACL): once the instance holds a feed, commits of other
    instances cannot reach it, so it is not ready; writes still commit. Allowed again, it is ready
    without a restart."""
    user = f"nosub{random.randrange(10**6)}"
    assert cluster.redis.command("ACL", "SETUSER", user, "on", ">nosub-password", "~*", "&*", "+@all",
                                 "-subscribe", "-psubscribe", "-ssubscribe") == "OK"
    try:
        url = cluster.redis.url.replace("redis://", f"redis://{user}:nosub-password@")
        instance = cluster.start(*PLAIN, "--redis", url, "--redis-prefix", new_prefix())
        # Commands work: the write commits. Following the feed it holds needs SUBSCRIBE, which is refused.
        assert instance.http("PUT", "/feeds/x", json_body={"sections": []}).status == 201, "commands still work"
        reply = wait_until(lambda: (lambda r: r if r.status == 503 else None)(instance.http("GET", "/readyz")), timeout=10,
                           message="/readyz to say 503 while SUBSCRIBE is refused")
        assert "SUBSCRIBE" in reply.json().get("redis", ""), reply
        assert instance.http("GET", "/healthz").status == 200, "liveness is not readiness"
        assert cluster.redis.command("ACL", "SETUSER", user, "+subscribe") == "OK"
        wait_until(lambda: instance.http("GET", "/readyz").status == 200, timeout=10, message="/readyz 200 once SUBSCRIBE is allowed")
    finally:
        cluster.redis.command("ACL", "DELUSER", user)


def test_max_store_bytes_counts_every_instances_feeds(cluster):
    a = cluster.add(*PLAIN, "--max-store-bytes", "6000")
    b = cluster.add(*PLAIN, "--max-store-bytes", "6000")

    def document(tag):  # about 3.3 kB stored
        return {"sections": [{"id": "s", "model": None,
                              "items": [{"id": f"{tag}{i}", "kind": "k", "model": {"text": "x" * 300}} for i in range(10)]}]}

    assert a.http("PUT", "/feeds/first", json_body=document("a")).status == 201
    reply = b.http("PUT", "/feeds/second", json_body=document("b"))
    assert reply.status == 507 and reply.json().get("limit") == "max-store-bytes", \
        f"a second 3.3 kB feed with --max-store-bytes 6000, the first made on another instance -> {reply}"
    assert a.http("DELETE", "/feeds/first").status == 204
    assert b.http("PUT", "/feeds/second", json_body=document("b")).status == 201, "deleting on another instance made no room"


# ----------------------------------------------------------------------------------------------------
# 10. The URL, the environment, a Redis that is not there yet


@pytest.mark.parametrize("url, words", [
    ("http://127.0.0.1:6379", ["redis://"]),
    ("rediss://127.0.0.1:6379", ["tls"]),
    ("redis://127.0.0.1:notaport", ["port"]),
    ("redis://127.0.0.1:70000", ["port"]),
    ("redis://127.0.0.1:6379/x", ["db", "database"]),
    ("redis://", ["host", "empty"]),
    ("127.0.0.1:6379", ["redis://"]),
])
def test_a_malformed_redis_url_exits_2_saying_what_is_wrong(url, words):
    for how, args, env in (("--redis", ("--port", "0", "--redis", url), None),
                           ("DIFFSTREAM_REDIS", ("--port", "0"), {"DIFFSTREAM_REDIS": url})):
        result = exits(*args, env=env, timeout=10)
        assert result.returncode == 2, f"{how} {url!r}: exit {result.returncode}, stderr {result.stderr!r}"
        message = result.stderr.lower()
        assert "redis" in message and any(word in message for word in words), \
            f"{how} {url!r}: stderr does not say what is wrong (expected one of {words}): {result.stderr!r}"


def test_diffstream_redis_environment_works_like_the_flag(cluster):
    by_flag = cluster.add(*PLAIN)
    by_env = cluster.start("--redis-prefix", cluster.prefix, *PLAIN, env={"DIFFSTREAM_REDIS": cluster.redis.url})
    document = random_document(random.Random(2610), "env")
    assert by_env.put("viaenv", document)["version"] == 1
    assert normalised(settled(by_flag, "/feeds/viaenv", 1)) == normalised(document), "the instance configured by the environment is not on that Redis"
    keys = cluster.redis.command("KEYS", f"{cluster.prefix}:v1:*")
    assert keys, f"no key under {cluster.prefix}:v1:"


def test_a_redis_not_reachable_at_start_is_retried_until_it_is(tmp_path, public_dir):
    require_redis()
    port = free_port()
    process = subprocess.Popen([str(BINARY), "--host", "127.0.0.1", "--port", "0", "--public", str(public_dir), "--data", "none",
                                *PLAIN, "--redis", f"redis://127.0.0.1:{port}", "--redis-prefix", new_prefix()],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_environment())
    lines, changed = [], threading.Condition()

    def read():
        for raw in process.stderr:
            with changed:
                lines.append(raw.decode("utf-8", "replace"))
                changed.notify_all()
        with changed:
            lines.append(None)
            changed.notify_all()
    threading.Thread(target=read, daemon=True).start()

    def wait_line(pattern, timeout):
        deadline = time.monotonic() + timeout
        with changed:
            while True:
                match = next((re.search(pattern, line) for line in lines if line and re.search(pattern, line)), None)
                if match:
                    return match
                remaining = deadline - time.monotonic()
                assert remaining > 0 and None not in lines, f"no line matching {pattern!r}; stderr: {''.join(l for l in lines if l)}"
                changed.wait(remaining)
    directory = tmp_path / "late-redis"
    directory.mkdir()
    redis_server = None
    try:
        wait_line(rf"Redis at redis://127\.0\.0\.1:{port}(/0)? is not reachable .*retrying every", timeout=10)
        redis_server = RedisServer(str(directory), port=port)
        match = wait_line(r"diffstream listening on https?://[^\s]+:(\d+)", timeout=15)
        connection = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=10)
        connection.request("PUT", "/feeds/late", body=json.dumps(random_document(random.Random(1), "late")),
                           headers={"Content-Type": "application/json"})
        assert connection.getresponse().status == 201
        connection.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if redis_server:
            redis_server.stop()


def test_a_stop_while_waiting_for_redis_exits_0(public_dir):
    """An orchestrator that stops an instance still waiting for Redis gets a clean exit, not a failure."""
    require_redis()
    port = free_port()
    process = subprocess.Popen([str(BINARY), "--host", "127.0.0.1", "--port", "0", "--public", str(public_dir), "--data", "none",
                                *PLAIN, "--redis", f"redis://127.0.0.1:{port}", "--redis-prefix", new_prefix()],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=clean_environment())
    try:
        for raw in process.stderr:
            if b"retrying every" in raw:
                break
        else:
            pytest.fail("the instance never said it retries")
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
        assert b"stopped while waiting for Redis" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_redis_threads_are_named_for_their_connections(cluster):
    """The Redis connections' threads show in `top -H` and /proc: commits, reads, pub/sub."""
    (instance,) = cluster.launch(1, *PLAIN)
    instance.put("named", {"sections": []})
    names = instance.thread_names()
    assert {"redis-commit-0", "redis-store", "redis-pubsub"} <= names, sorted(names)
