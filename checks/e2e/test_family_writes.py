"""No acknowledged write to a family member is undone (issue 52; docs/view-models.md, "Writes and truth"):
the demo family `home.<user>` keeps what users change (truth `.kept`, the default), so a PATCH is there
after its member was dropped when idle and made again, and after a restart, with `--data` and with
`--redis`. In memory (`--data none`) a dropped member's state is gone by design, as documented: it is made
again by its loader, under a new history (a resuming client gets a snapshot, never a batch).

Each test chooses its store, so this file runs once, in the suite's default pass (scripts/test.sh).
Events and metrics are awaited, never slept for.
"""
from e2e_helpers import SSEClient, wait_until
from redis_helpers import cluster, redis  # noqa: F401 (fixtures)

CHANGE = {"recommendedHeader": {"title": "Just for Alice"}}


def header(document):
    return next(section for section in document["sections"] if section["id"] == "recommended")["model"]["title"]


def dropped(server, count):
    wait_until(lambda: server.metrics().get('diffstream_family_dropped_total{family="home"}', 0) >= count, timeout=30,
               message=f"{count} members dropped")


def patched_then_dropped(server):
    """PATCHes home.alice, waits until she is dropped; returns the PATCH's answer and the id a client holds."""
    with SSEClient(server.port, "/feeds/home.alice/events") as client:
        _, first = client.expect_event("snapshot")
        assert header(first) == "Recommended for Alice"
        reply = server.http("PATCH", "/feeds/home.alice", json_body=CHANGE)
        assert reply.status == 200, reply.body
        fields, _ = client.expect_event("batch")
    dropped(server, 1)
    return first, fields["id"]


def test_with_data_a_patch_survives_the_idle_drop_and_a_restart(start, tmp_path):
    data = tmp_path / "data"
    server = start("--data", data, "--examples", "home", "--family-idle", "0.2")
    first, held = patched_then_dropped(server)
    again = server.get("/feeds/home.alice")
    assert (header(again), again["history"], again["version"]) == ("Just for Alice", first["history"], 2)
    server.stop()
    server = start("--data", data, "--examples", "home")
    after = server.get("/feeds/home.alice")
    assert (header(after), after["history"], after["version"]) == ("Just for Alice", first["history"], 2)
    # The history went on: a client holding the PATCH's id gets the next change as one batch.
    with SSEClient(server.port, "/feeds/home.alice/events", headers={"Last-Event-ID": held}) as client:
        server.ok("PATCH", "/feeds/home.alice", {"recommendedHeader": {"isFeatured": True}})
        _, batch = client.expect_event("batch")
        assert (batch["history"], batch["from"], batch["version"]) == (first["history"], 2, 3)


def test_in_memory_a_dropped_member_is_made_again_by_its_loader_under_a_new_history(start):
    server = start("--data", "none", "--examples", "home", "--family-idle", "0.2")
    first, held = patched_then_dropped(server)
    again = server.get("/feeds/home.alice")
    assert header(again) == "Recommended for Alice" and again["version"] == 1
    assert again["history"] != first["history"]
    with SSEClient(server.port, "/feeds/home.alice/events", headers={"Last-Event-ID": held}) as client:
        kind, snapshot = client.expect_event("snapshot")
        assert snapshot["history"] == again["history"]


def test_with_redis_a_patch_survives_the_idle_drop_and_a_restart(cluster):
    (server,) = cluster.launch(1, "--examples", "home", "--family-idle", "0.2")
    first, _ = patched_then_dropped(server)
    again = server.get("/feeds/home.alice")
    assert (header(again), again["history"], again["version"]) == ("Just for Alice", first["history"], 2)
    server.stop()
    (server,) = cluster.launch(1, "--examples", "home")
    after = server.get("/feeds/home.alice")
    assert (header(after), after["history"], after["version"]) == ("Just for Alice", first["history"], 2)


def test_metrics_count_members_under_their_family_and_keep_no_series_of_a_dropped_one(start):
    """Issue 52, item 2: /metrics is bounded by families, not by users ever seen."""
    server = start("--data", "none", "--examples", "home", "--family-idle", "0.2")
    users = [f"wave{index:03d}" for index in range(60)]
    for user in users:
        server.ok("PATCH", f"/feeds/home.{user}", {"recommendedHeader": {"title": user}})
    with SSEClient(server.port, "/feeds/home.keeper/events") as client:
        client.expect_event("snapshot")
        wait_until(lambda: server.metrics().get('diffstream_family_subscribers{family="home"}') == 1, message="one stream on a member")
        dropped(server, len(users))
        text = server.http("GET", "/metrics").body.decode()
        assert "home.wave" not in text and 'feed="home.keeper"' not in text
        assert server.metrics()['diffstream_family_batches_total{family="home"}'] == len(users)
