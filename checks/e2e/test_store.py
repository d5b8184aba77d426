"""The durable store (--data): restarts, kill -9 during a write storm, resume, damaged data, a full disk,
the directory lock, and a bounded size on disk. STORE_CRASH_CYCLES sets the number of crash cycles
(20 by default; scripts/store-soak.sh runs more)."""
import hashlib
import http.client
import json
import os
import random
import re
import struct
import subprocess
import threading

import pytest

from e2e_helpers import AckingWriter, SSEClient, apply_ops, normalised, run_binary, wait_until

CRASH_CYCLES = int(os.environ.get("STORE_CRASH_CYCLES", "20"))
CRASH_SEED = int(os.environ.get("STORE_CRASH_SEED", random.randrange(1 << 30)))


def newest_log(data):
    """The log the store appends to: the newest feeds-<generation>.log."""
    return sorted(data.glob("feeds-*.log"))[-1]


def end_of_groups(raw):
    """Where the next group of a log goes: after the 32-byte file header, groups follow one another,
    each a 16-byte header (marker "DSG1", the body's length, two CRCs) and its body; the zero bytes after
    the last are space the store preallocated (docs/architecture.md)."""
    offset = 32
    while raw[offset:offset + 4] == b"DSG1":
        offset += 16 + struct.unpack_from("<I", raw, offset + 4)[0]
    assert not any(raw[offset:]), "only zero bytes after the last group"
    return offset


def doc(rng, size=8, tag=""):
    ids = rng.sample(range(40), size)
    return {"sections": [{"id": "s", "model": {"tag": tag}, "items": [{"id": f"i{i}", "kind": "k", "model": {"v": rng.randrange(1000)}} for i in ids]}]}


def digest(document):
    return hashlib.sha256(json.dumps(normalised(document), sort_keys=True).encode()).hexdigest()[:16]


def first_event(server, feed, last_event_id=None):
    """(event fields, data) of the first event of a subscription."""
    with SSEClient(server.port, f"/feeds/{feed}/events", headers={"Last-Event-ID": last_event_id} if last_event_id else None) as client:
        return client.expect_event("snapshot")


class Writer(AckingWriter):
    """PUTs random snapshots to its own feed until the server dies; the token of a write is its
    document's digest."""

    def __init__(self, port, feed, rng, acked, on_ack):
        super().__init__(port, acked, on_ack)
        self.feed, self.rng = feed, rng

    def next_write(self):
        document = doc(self.rng, tag=self.feed)
        return "PUT", f"/feeds/{self.feed}", json.dumps(document), digest(document)


def test_kill_9_during_a_write_storm_loses_nothing_acknowledged_and_never_reuses_a_version(start, tmp_path):
    rng = random.Random(CRASH_SEED)
    data = tmp_path / "data"
    feeds = [f"storm{i}" for i in range(4)]
    acked = {feed: None for feed in feeds}
    histories = {}
    contents = {}  # (feed, version) -> digest: never two contents for one version of one history
    subscriber = None  # (last id, document) of a subscriber to storm0 across restarts
    writers_by_feed = {}  # the previous cycle's writers: their PUT in flight when the server died
    stats = {"answer lost but stored": 0, "resumed with batches": 0, "acknowledged writes": 0}
    for cycle in range(CRASH_CYCLES):
        context = f"seed {CRASH_SEED}, cycle {cycle}"
        server = start("--data", data, "--replay", "1000")
        for feed in feeds:
            if acked[feed] is None:
                continue
            fields, snap = first_event(server, feed)
            history, version = fields["id"].split(".")[1], int(fields["id"].split(".")[2])
            assert histories.setdefault(feed, history) == history, f"{feed}: a new history after a restart ({context})"
            got = digest(snap)
            assert contents.setdefault((feed, version), got) == got, f"{feed}: version {version} served with other content ({context})"
            acked_version, acked_digest = acked[feed]
            if version == acked_version:
                assert got == acked_digest, f"{feed}: v{version} is not the acknowledged content ({context})"
            else:
                inflight = writers_by_feed[feed].inflight
                assert version == acked_version + 1 and got == inflight, \
                    f"{feed}: at v{version}, acknowledged v{acked_version}; only the unanswered PUT may follow it ({context})"
                acked[feed] = (version, got)
                stats["answer lost but stored"] += 1
        if subscriber:
            # Resume with Last-Event-ID: exactly the missed batches, then the same content as GET.
            last_id, document = subscriber
            current = server.get("/feeds/storm0")
            with SSEClient(server.port, "/feeds/storm0/events", headers={"Last-Event-ID": last_id}) as client:
                version = int(last_id.split(".")[2])
                while version < current["version"]:
                    fields, event = client.expect_event("batch")
                    assert event["from"] == version, f"a gap in the replay ({context})"
                    document = apply_ops(document, event["ops"])
                    version = event["version"]
                    stats["resumed with batches"] += 1
            assert normalised(document) == normalised(current), f"the resumed subscriber did not converge ({context})"
        target = rng.randint(3, 40)
        count = [0]
        enough = threading.Condition()

        def on_ack():
            with enough:
                count[0] += 1
                enough.notify_all()
        writers_by_feed = {feed: Writer(server.port, feed, random.Random(rng.random()), acked[feed], on_ack) for feed in feeds}
        for writer in writers_by_feed.values():
            writer.start()
        with enough:
            assert enough.wait_for(lambda: count[0] >= target, timeout=30), f"writes stalled ({context})"
        client = SSEClient(server.port, "/feeds/storm0/events")
        fields, snap = client.expect_event("snapshot")
        document, last_id = snap, fields["id"]
        with enough:
            enough.wait_for(lambda: count[0] >= target + rng.randint(0, 12), timeout=30)
        server.kill()  # SIGKILL at a random point of the storm
        stats["acknowledged writes"] += count[0]
        for writer in writers_by_feed.values():
            writer.join(10)
            acked[writer.feed] = writer.acked
        while True:  # what reached the subscriber before the kill
            event = client.next_event(timeout=2)
            if event is None:
                break
            if event.get("event") == "batch":
                document = apply_ops(document, json.loads(event["data"])["ops"])
                last_id = event["id"]
        client.close()
        subscriber = (last_id, document)
    assert all(acked.values())
    print(f"crash storm: {CRASH_CYCLES} cycles, seed {CRASH_SEED}: {stats}")


def test_resume_with_curl_across_a_restart_gets_only_the_missed_batches(start, tmp_path):
    data = tmp_path / "data"
    first = start("--data", data)
    rng = random.Random(7)
    first.put("news", doc(rng))
    fields, _ = first_event(first, "news")
    history = fields["id"].split(".")[1]
    for _ in range(3):
        first.put("news", doc(rng))
    first.kill()
    second = start("--data", data)
    curl = subprocess.Popen(["curl", "-sN", "-H", f"Last-Event-ID: ds1.{history}.2", f"http://127.0.0.1:{second.port}/feeds/news/events"],
                            stdout=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in curl.stdout:
            if line.startswith(("id:", "event:")):
                seen.append(line.strip())
            if line.strip() == f"id: ds1.{history}.4":
                break
        assert seen == ["event: batch", f"id: ds1.{history}.3", "event: batch", f"id: ds1.{history}.4"]
        second.put("news", doc(rng))
        for line in curl.stdout:
            if line.startswith("id:"):
                assert line.strip() == f"id: ds1.{history}.5"
                break
    finally:
        curl.terminate()
        curl.wait()


def test_view_model_state_and_deletions_survive_a_restart(start, tmp_path):
    data = tmp_path / "data"
    first = start("--data", data)
    first.ok("PATCH", "/feeds/home", {"banner": None, "recommendedHeader": {"title": "Kept"}})
    first.ok("POST", "/feeds/blackjack/actions/deal")
    first.ok("POST", "/feeds/forecast/actions/select", {"day": "d-thu"})
    first.put("temp", {"sections": []})
    assert first.http("DELETE", "/feeds/temp").status == 204
    before = {feed: first.get(f"/feeds/{feed}") for feed in ["home", "blackjack", "forecast", "week"]}
    first.kill()
    second = start("--data", data)
    for feed, document in before.items():
        assert second.get(f"/feeds/{feed}") == document, feed
    assert second.http("GET", "/feeds/temp").status == 404
    assert "temp" not in [entry["feed"] for entry in second.get("/feeds")]
    # The restored hand goes on: the next deal adds one card to it.
    cards = len(before["blackjack"]["sections"][0]["items"])
    second.ok("POST", "/feeds/blackjack/actions/deal")
    after = second.get("/feeds/blackjack")
    assert after["version"] == before["blackjack"]["version"] + 1
    assert len(after["sections"][0]["items"]) in (cards + 1, 1)  # or a new hand after 21


def test_a_torn_tail_of_the_log_loses_nothing_acknowledged(start, tmp_path):
    data = tmp_path / "data"
    first = start("--data", data)
    rng = random.Random(3)
    for _ in range(5):
        last = doc(rng)
        reply = first.put("torn", last)
    first.kill()
    # The part of a group a write cut by the crash leaves: where the next group goes (nonzero bytes, so
    # all 2000 count as torn rather than free space).
    log = newest_log(data)
    raw = bytearray(log.read_bytes())
    end = end_of_groups(raw)
    raw[end:end + 2000] = bytes(rng.randrange(1, 256) for _ in range(2000))
    log.write_bytes(bytes(raw))
    second = start("--data", data)
    second.wait_log(r"dropped 2000 bytes at the end of .*feeds-\d+\.log")
    document = second.get("/feeds/torn")
    assert document["version"] == reply["version"] and normalised(document) == normalised(last)
    assert second.put("torn", doc(rng))["version"] == reply["version"] + 1  # appends after the cut


def test_corrupt_bytes_in_the_middle_stop_the_start_unless_set_aside(start, tmp_path):
    data = tmp_path / "data"
    first = start("--data", data)
    first.put("good", doc(random.Random(1)))
    first.put("bad", {"sections": [{"id": "s", "items": [{"id": "marker-0123456789", "kind": "k"}]}]})
    first.put("good", doc(random.Random(2)))  # a later group: the damage is in the middle
    assert first.stop() == 0
    log = newest_log(data)
    raw = bytearray(log.read_bytes())
    offset = raw.find(b"marker-0123456789")
    assert offset > 0
    raw[offset:offset + 6] = b"XXXXXX"
    log.write_bytes(bytes(raw))
    refused = run_binary("--port", "0", "--public", tmp_path, "--data", data)
    assert refused.returncode == 2, refused.stderr
    assert str(log) in refused.stderr and "'bad'" in refused.stderr and "--set-aside-damaged" in refused.stderr
    second = start("--data", data, "--set-aside-damaged")
    second.wait_log(r"set aside damaged data: bad: ")
    assert second.http("GET", "/feeds/bad").status == 404
    assert second.get("/feeds/good")["version"] == 2
    assert any(path.name.startswith(log.name + ".damaged-") for path in data.iterdir())  # kept aside, not deleted
    assert second.stop() == 0
    third = start("--data", data)  # set aside once, for good
    assert third.http("GET", "/feeds/bad").status == 404 and third.get("/feeds/good")["version"] == 2


def test_a_second_instance_and_an_unusable_directory_are_refused(start, tmp_path):
    data = tmp_path / "data"
    start("--data", data)
    second = run_binary("--port", "0", "--public", tmp_path, "--data", data)
    assert second.returncode == 2 and str(data) in second.stderr and "in use by another diffstream" in second.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    third = run_binary("--port", "0", "--public", tmp_path, "--data", blocker / "data")
    assert third.returncode == 2 and str(blocker / "data") in third.stderr


def test_a_database_of_the_sqlite_store_is_migrated(start, tmp_path):
    """Data directories written by earlier versions (one SQLite database) are read and converted once."""
    sqlite3 = pytest.importorskip("sqlite3")
    data = tmp_path / "data"
    data.mkdir()
    snapshot = {"sections": [{"id": "s", "items": [{"id": "a", "kind": "k", "model": {"n": 1}}]}]}
    encoded = json.dumps(snapshot, separators=(",", ":")).encode()
    crc = __import__("zlib").crc32
    with sqlite3.connect(data / "feeds.sqlite3") as database:
        database.executescript("""
            CREATE TABLE feeds (name TEXT PRIMARY KEY, history TEXT NOT NULL, version INTEGER NOT NULL,
                snapshot BLOB NOT NULL, snapshot_crc INTEGER NOT NULL, view_state BLOB, view_crc INTEGER);
            CREATE TABLE batches (feed TEXT NOT NULL, version INTEGER NOT NULL, bytes BLOB NOT NULL,
                crc INTEGER NOT NULL, PRIMARY KEY (feed, version)) WITHOUT ROWID;
            CREATE TABLE damaged_feeds (name TEXT NOT NULL, reason TEXT NOT NULL, set_aside_at INTEGER NOT NULL,
                history TEXT, version INTEGER, snapshot BLOB, view_state BLOB);
            PRAGMA user_version=1;""")
        database.execute("INSERT INTO feeds VALUES ('old', '00000000000000aa', 3, ?, ?, NULL, NULL)", (encoded, crc(encoded)))
    server = start("--data", data)
    server.wait_log(r"migrated 1 feeds from .*feeds\.sqlite3")
    document = server.get("/feeds/old")
    assert document["version"] == 3 and normalised(document) == normalised(snapshot)
    assert first_event(server, "old")[0]["id"] == "ds1.00000000000000aa.3"  # same history: ids stay valid
    assert not (data / "feeds.sqlite3").exists() and any(p.name.startswith("feeds.sqlite3.migrated-") for p in data.iterdir())


def test_the_size_on_disk_stays_bounded_under_many_puts(start, tmp_path):
    data = tmp_path / "data"
    server = start("--data", data, "--replay", "16")
    rng = random.Random(5)
    items = [{"id": f"i{i}", "kind": "k", "model": {"text": "x" * 250, "n": i}} for i in range(120)]
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    puts = int(os.environ.get("STORE_SIZE_PUTS", "300"))
    snapshot_bytes = 0
    for index in range(puts):
        items[rng.randrange(len(items))]["model"]["n"] = index
        body = json.dumps({"sections": [{"id": "s", "items": items}]})
        snapshot_bytes = len(body)
        connection.request("PUT", "/feeds/big", body=body)
        response = connection.getresponse()
        response.read()
        assert response.status in (200, 201)
    connection.close()
    on_disk = sum(path.stat().st_size for path in data.iterdir() if path.is_file())
    window = 16 * 600  # one small update event each
    assert on_disk <= 4 * (snapshot_bytes + window) + 1_300_000, (on_disk, snapshot_bytes, puts * snapshot_bytes)
    # The metric is the files' size (preallocated space included), once a compaction under way is done: the
    # log's, and the family members' store in members/ (its database, WAL and shared-memory index).
    wait_until(lambda: server.metrics()["diffstream_store_size_bytes"] == sum(path.stat().st_size for path in data.rglob("*") if path.is_file()),
               message="diffstream_store_size_bytes to match the files under the data directory")


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root and mount permission): {result.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_answers_503_then_recovers_without_a_restart(start, small_disk):
    data = small_disk / "data"
    server = start("--data", data)
    small = {"sections": [{"id": "s", "items": [{"id": "a", "kind": "k"}]}]}
    assert server.put("f", small)["version"] == 1
    filler = small_disk / "filler"

    def fill():
        with open(filler, "ab") as out:
            try:
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
            except OSError:
                pass

    fill()
    big = {"sections": [{"id": "s", "items": [{"id": f"i{i}", "kind": "k", "model": {"t": "y" * 100}} for i in range(3000)]}]}
    reply = server.http("PUT", "/feeds/f", json_body=big)
    assert reply.status == 503, reply
    assert reply.headers["Content-Type"].startswith("application/json") and reply.json()["error"] == "storage full"
    assert str(small_disk) in reply.json()["detail"]
    assert server.get("/feeds/f")["version"] == 1  # reads go on, nothing half-written
    assert server.http("PUT", "/feeds/g", json_body=big).status == 503
    assert server.metrics()["diffstream_store_failed_commits_total"] >= 2
    # Room for a small write but not for the 256 KiB of zeros a log preallocates past its end (the
    # failed writes gave back the log's, so the disk is filled again): the write goes in without them.
    fill()
    os.truncate(filler, filler.stat().st_size - 65536)
    assert server.put("small", small)["version"] == 1
    raw = newest_log(data).read_bytes()
    assert len(raw) == end_of_groups(raw), "no space was preallocated on the nearly full disk"
    filler.unlink()
    assert server.put("f", big)["version"] == 2  # space is back: no restart needed
    assert server.stop() == 0
    again = start("--data", data)
    document = again.get("/feeds/f")
    assert document["version"] == 2 and len(document["sections"][0]["items"]) == 3000
    assert again.http("GET", "/feeds/g").status == 404
    assert again.stop() == 0


def test_a_backup_taken_while_writes_go_on_is_consistent_and_starts(start, tmp_path):
    data = tmp_path / "data"
    server = start("--data", data)
    big = {"sections": [{"id": "s", "items": [{"id": f"i{i}", "kind": "k", "model": {"t": "z" * 200}} for i in range(100)]}]}
    server.put("steady", big)
    acked = []
    writer = Writer(server.port, "storm", random.Random(8), None, lambda: acked.append(writer.acked))
    writer.start()
    while len(acked) < 50:
        threading.Event().wait(0.01)
    before = acked[-1][0]
    result = run_binary("backup", "--data", data, tmp_path / "backup")
    assert result.returncode == 0, result.stderr
    assert re.search(r"backed up \d+ feeds and \d+ family members from .* \(\d+ files", result.stdout), result.stdout
    after = acked[-1][0]
    server.stop()
    writer.join(timeout=10)
    again = start("--data", tmp_path / "backup")
    version = again.get("/feeds/storm")["version"]
    assert before <= version <= after + 1  # a moment during the copy (the write in flight may be in it)
    assert normalised(again.get("/feeds/steady")) == normalised(big)
    refused = run_binary("backup", "--data", data, tmp_path / "backup")
    assert refused.returncode == 2 and "already holds store files" in refused.stderr


def test_threads_are_named_for_their_jobs(start, tmp_path):
    """`top -H`, `perf` and /proc show each thread's job: the event loops, the store's committer, the
    signal thread (a name set on a Foundation Thread before it starts never reaches the system thread)."""
    server = start("--loops", "2", "--data", str(tmp_path / "store"))
    server.put("named", {"sections": []})
    names = server.thread_names()
    assert {"loop-0", "loop-1", "store-commit", "signals"} <= names, sorted(names)
