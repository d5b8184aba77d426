"""Redis put back from an older AOF (issue 51, item 2): a (history, version) pair names one state, forever.

A copy of Redis's AOF directory is taken at version 3, the feed is written on to 5, and the copy is put
back. A client whose id is beyond what Redis holds gets a snapshot, and the log says Redis may have gone
back and names the command (a read never changes a feed: ids are not signed). `diffstream restore
--redis` (docs/deploy-redis.md, "Restoring Redis") gives every feed a new history, so no version is
numbered twice: every id from before, older or newer than the copy, gets a snapshot, and running
instances resync their subscribers.

Nothing sleeps: every wait is on a condition."""
import json
import shutil
import subprocess

from e2e_helpers import BINARY, SSEClient, clean_environment, wait_until
from redis_helpers import cluster, redis, require_redis  # noqa: F401 (fixtures)

PLAIN = ("--examples", "none")


def document(n):
    return {"sections": [{"id": "s", "model": None, "items": [{"id": f"i{k}", "kind": "row", "model": None} for k in range(n)]}]}


def first_event(instance, feed, last_id):
    with SSEClient(instance.port, f"/feeds/{feed}/events", headers={"Last-Event-ID": last_id}) as stream:
        event = stream.next_event(timeout=10)
    assert event is not None, f"no event for a resume from {last_id}"
    return event.get("event"), json.loads(event["data"])


def put_back(cluster, instances, copy):
    """Stops the instances and Redis, puts the AOF copy back, starts Redis on it."""
    for instance in instances:
        instance.stop()
    cluster.redis.stop()
    aof = f"{cluster.redis.directory}/appendonlydir"
    shutil.rmtree(aof)
    shutil.copytree(copy, aof)
    cluster.redis.start()


def test_redis_put_back_from_an_older_aof_never_resumes_a_lost_position(cluster, tmp_path):
    (a,) = cluster.launch(1, *PLAIN)
    for n in range(1, 4):
        a.put("score", document(n))
    follower = cluster.follow("score", a, name="score on A")
    follower.wait_version(3)
    old = follower.history
    copy = tmp_path / "aof-at-3"
    shutil.copytree(f"{cluster.redis.directory}/appendonlydir", copy)  # appendfsync always: the copy holds version 3
    for n in range(4, 6):
        a.put("score", document(n))
    follower.wait_version(5)
    follower.close()

    put_back(cluster, [a], copy)
    b = cluster.add(*PLAIN)
    assert b.get("/feeds/score")["version"] == 3, "the AOF copy is not the older one"
    # The client at version 5 gets a snapshot, and the log names the command.
    kind, data = first_event(b, "score", f"ds1.{old}.5")
    assert kind == "snapshot" and (data["history"], data["version"]) == (old, 3), (kind, data)
    b.wait_log("diffstream restore --redis", timeout=10)
    done = subprocess.run([str(BINARY), "restore", *cluster.flags()], capture_output=True, text=True, timeout=30, env=clean_environment())
    assert done.returncode == 0 and done.stdout.startswith("1 feeds"), (done.returncode, done.stdout, done.stderr)
    kind, data = first_event(b, "score", f"ds1.{old}.3")
    assert kind == "snapshot" and data["history"] != old, f"an id from the copy still resumes: {kind} {data}"
    fresh = data["history"]
    for n in range(5, 9):  # on past the numbers clients held
        b.put("score", document(n))
    kind, data = first_event(b, "score", f"ds1.{old}.4")
    assert kind == "snapshot" and data["history"] == fresh, f"an id of the lost timeline resumed: {kind} {data}"
    kind, data = first_event(b, "score", f"ds1.{fresh}.5")
    assert kind == "batch" and data["history"] == fresh, f"an id of the new history no longer resumes: {kind} {data}"

    # Put back again, then the command: every feed starts a new history, even for an id from before the copy.
    copy_again = tmp_path / "aof-again"
    shutil.copytree(f"{cluster.redis.directory}/appendonlydir", copy_again)
    b.put("score", document(9))
    put_back(cluster, [b], copy_again)
    c = cluster.add(*PLAIN)
    watcher = cluster.follow("score", c, name="score on C")
    watcher.wait_version(c.get("/feeds/score")["version"])
    held = watcher.history
    done = subprocess.run([str(BINARY), "restore", *cluster.flags()], capture_output=True, text=True, timeout=30, env=clean_environment())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 feeds"), done.stdout
    wait_until(lambda: watcher.history not in (None, held), timeout=10, message="the running instance's subscriber resyncs to the new history")
    assert not watcher.errors, watcher.describe()
    kind, data = first_event(c, "score", f"ds1.{held}.1")
    assert kind == "snapshot" and data["history"] == watcher.history, (kind, data)
    watcher.close()


def test_restore_with_redis_refuses_a_backup_argument(cluster):
    done = subprocess.run([str(BINARY), "restore", *cluster.flags(), "/tmp/some-backup"], capture_output=True, text=True, timeout=30, env=clean_environment())
    assert done.returncode != 0 and "not from BACKUP" in done.stderr, (done.returncode, done.stderr)
