"""Families under `--redis` (issue 38, item 6), end to end: the example family `home.<user>` served by two
instances sharing one redis-server. A member is a shared feed: any instance makes it on first use and
serves it with the same history, a change sent to either instance runs once and reaches the subscribers
of both once, and an instance that drops an idle member leaves its state in Redis.

Each test starts its own redis-server and instances (`cluster` in redis_helpers.py), so this file runs
once, in the suite's default pass, not again in its --data and --redis passes (scripts/test.sh). Events
are awaited, never slept for. Skipped when redis-server is missing.
"""
import concurrent.futures

from e2e_helpers import SSEClient, wait_until
from redis_helpers import cluster, redis  # noqa: F401 (fixtures)

HOME = ("--examples", "home")


def banner(document):
    section = next(section for section in document["sections"] if section["id"] == "banner")
    return section["items"][0]["model"]["title"]


def patch(instance, user, body, key=None):
    headers = {"Idempotency-Key": key} if key else {}
    return instance.http("PATCH", f"/feeds/home.{user}", json_body=body, headers=headers)


def shards_held(instance):
    return instance.metrics().get('diffstream_family_shards_held{family="home"}', 0)


def test_a_change_on_one_instance_runs_once_and_reaches_both_instances_once(cluster):
    a, b = cluster.launch(2, *HOME)
    with SSEClient(a.port, "/feeds/home.alice/events") as on_a, SSEClient(b.port, "/feeds/home.alice/events") as on_b:
        _, first_a = on_a.expect_event("snapshot")
        _, first_b = on_b.expect_event("snapshot")
        assert (first_a["history"], first_a["version"]) == (first_b["history"], first_b["version"]) == (first_a["history"], 1)

        # Sent to B while a subscriber is on A; retried on A with its key: the first answer, no second run.
        reply = patch(b, "alice", {"banner": {"id": "note", "title": "Hello Alice"}}, key="alice-1")
        assert reply.status == 200 and reply.json()["version"] == 2, reply
        retried = patch(a, "alice", {"banner": {"id": "note", "title": "Hello Alice"}}, key="alice-1")
        assert retried.status == 200 and retried.json()["version"] == 2, retried
        for client in (on_a, on_b):
            fields, batch = client.expect_event("batch")
            assert (batch["history"], batch["from"], batch["version"]) == (first_a["history"], 1, 2), batch

        # Two changes at once, one on each instance: both apply, each once (versions 3 and 4, no lost update).
        changes = [(a, {"banner": {"id": "note", "title": "From A"}}), (b, {"recommendedHeader": {"title": "From B"}})]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(lambda change: patch(change[0], "alice", change[1]), changes))
        assert [reply.status for reply in replies] == [200, 200], replies
        assert sorted(reply.json()["version"] for reply in replies) == [3, 4], replies
        for client in (on_a, on_b):
            versions = [client.expect_event("batch")[1]["version"] for _ in range(2)]
            assert versions == [3, 4], versions
        # alice is live on both: her shard's lease (where her sources run) is held by one of them.
        wait_until(lambda: (shards_held(a), shards_held(b)) in ((1, 0), (0, 1)), timeout=30, message="one instance holds alice's shard")
        for instance in (a, b):
            document = instance.get("/feeds/home.alice")
            header = next(section for section in document["sections"] if section["id"] == "recommended")["model"]["title"]
            assert document["version"] == 4 and banner(document) == "From A" and header == "From B", document


def test_a_member_made_on_one_instance_resumes_on_the_other_with_a_batch(cluster):
    a, b = cluster.launch(2, *HOME)
    with SSEClient(a.port, "/feeds/home.bob/events") as client:
        _, first = client.expect_event("snapshot")
        assert patch(a, "bob", {"banner": {"id": "note", "title": "One"}}).status == 200
        fields, _ = client.expect_event("batch")
        last_id = fields["id"]
        assert patch(a, "bob", {"banner": {"id": "note", "title": "Two"}}).status == 200
        client.expect_event("batch")
    # B never served bob: it makes the member on this use, and the stream resumes the history A served.
    with SSEClient(b.port, "/feeds/home.bob/events", headers={"Last-Event-ID": last_id}) as client:
        fields, batch = client.expect_event("batch")
        assert (batch["history"], batch["from"], batch["version"]) == (first["history"], 2, 3), batch
        assert fields["id"] == f"ds1.{first['history']}.3"


def test_an_idle_member_dropped_on_one_instance_keeps_its_state(cluster):
    a, b = cluster.launch(2, *HOME, "--family-idle", "0.2")
    with SSEClient(b.port, "/feeds/home.carol/events") as on_b:
        _, first = on_b.expect_event("snapshot")
        # B made carol first: it holds her shard's lease, and keeps her live (her subscriber is there).
        wait_until(lambda: shards_held(b) == 1, timeout=30, message="B holds carol's shard")
        assert patch(a, "carol", {"banner": {"id": "note", "title": "Kept"}}).status == 200
        on_b.expect_event("batch")
        # A has no subscriber of carol and does not hold her shard: it drops the member once idle.
        wait_until(lambda: a.metrics().get('diffstream_family_dropped_total{family="home"}', 0) >= 1, timeout=30,
                   message="A dropped carol")
        assert b.metrics()['diffstream_family_live{family="home"}'] == 1
        # Made again on A (a read is a use) while live on B: taken as Redis holds it, not rendered again.
        for instance in (a, b):
            document = instance.get("/feeds/home.carol")
            assert (document["history"], document["version"], banner(document)) == (first["history"], 2, "Kept"), document
        # A change through A goes on from the kept state, as one batch to B's subscriber.
        assert patch(a, "carol", {"recommendedHeader": {"title": "Later"}}).status == 200
        _, batch = on_b.expect_event("batch")
        assert (batch["history"], batch["from"], batch["version"]) == (first["history"], 2, 3), batch
        assert banner(b.get("/feeds/home.carol")) == "Kept"
