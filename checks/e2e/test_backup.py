"""Backups and restores of the --data store (issue 51): `diffstream backup` copies the family members'
store too, and restores are explicit: a start on a restored copy gives every feed and member a new
history, so a client holding an id written after the backup gets a snapshot, never batches computed from
a state it never had; a plain restart or a kill -9 afterwards keeps the new histories (batches)."""
import json
import shutil
import sqlite3

from e2e_helpers import SSEClient, run_binary


def document(tag, items=3):
    return {"sections": [{"id": "s", "model": {"tag": tag}, "items": [{"id": f"i{i}", "kind": "k", "model": {"v": f"{tag}-{i}"}} for i in range(items)]}]}


def first_event(server, feed, last_event_id):
    """(kind, fields, data) of the first event a client resuming from `last_event_id` gets."""
    with SSEClient(server.port, f"/feeds/{feed}/events", headers={"Last-Event-ID": last_event_id}) as client:
        event = client.next_event()
        assert event is not None, "no event"
        return event.get("event"), event, json.loads(event["data"])


def section_title(document_, section_id):
    return next(section["model"]["title"] for section in document_["sections"] if section["id"] == section_id)


def patch_member(server, feed, title):
    return server.ok("PATCH", f"/feeds/{feed}", {"recommendedHeader": {"title": title}})


def write(server, feed, step):
    """One new version of `feed`: a PUT of a plain feed, a PATCH of a family member."""
    if feed.startswith("home."):
        patch_member(server, feed, f"step {step}")
    else:
        server.put(feed, document(f"step {step}"))


def restore(data, backup):
    """What an operator does: the old directory moved aside, the backup put in its place."""
    data.rename(data.with_name(data.name + ".old"))
    result = run_binary("restore", "--data", data, backup)
    assert result.returncode == 0, result.stderr
    assert "restored" in result.stdout, result.stdout


def test_a_backup_taken_while_the_server_runs_brings_back_the_family_members(start, tmp_path):
    data, backup = tmp_path / "data", tmp_path / "backup"
    server = start("--data", data)
    patch_member(server, "home.alice", "Kept by the backup")
    server.put("news", document("kept"))
    before = server.get("/feeds/home.alice")
    assert section_title(before, "recommended") == "Kept by the backup"
    result = run_binary("backup", "--data", data, backup)  # the server holds the directory's lock meanwhile
    assert result.returncode == 0, result.stderr
    assert "1 family members" in result.stdout, result.stdout
    assert (backup / "RESTORED-FROM-BACKUP").exists()
    # The copy is a SQLite file of its own, read back by the backup; here by Python's sqlite3 too.
    with sqlite3.connect(backup / "members" / "members.sqlite3") as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        version, snapshot = copy.execute("SELECT version, snapshot FROM members WHERE name = 'home.alice'").fetchone()
    assert version == before["version"] and b"Kept by the backup" in snapshot
    server.stop()

    restore(data, backup)
    again = start("--data", data)
    after = again.get("/feeds/home.alice")
    assert section_title(after, "recommended") == "Kept by the backup"
    assert after["version"] == before["version"] and after["history"] != before["history"]
    assert again.get("/feeds/news")["sections"][0]["model"] == {"tag": "kept"}
    assert not (data / "RESTORED-FROM-BACKUP").exists()


def test_restoring_a_backup_never_reuses_a_version_and_later_restarts_keep_the_history(start, tmp_path):
    """The issue's scenario, for a plain feed and a family member: written to v5, backed up, written on
    to v10; a client holds v8. Restored and written five more versions, the client resuming from v8
    gets a snapshot of a new history, not the batches of a v9 and v10 built on another v8. Then a plain
    restart and a kill -9 keep that new history: the client resumes with batches."""
    data, backup = tmp_path / "data", tmp_path / "backup"
    feeds = ["news", "home.alice"]
    server = start("--data", data)
    versions = {}
    for feed in feeds:
        step = 0
        while True:
            current = server.http("GET", f"/feeds/{feed}")
            if current.status == 200 and current.json()["version"] >= 5:
                break
            step += 1
            write(server, feed, f"a{step}")
        versions[feed] = current.json()
        assert versions[feed]["version"] == 5, versions[feed]
    result = run_binary("backup", "--data", data, backup)
    assert result.returncode == 0, result.stderr
    held = {}
    for feed in feeds:
        for step in range(6, 11):
            write(server, feed, f"b{step}")
        now = server.get(f"/feeds/{feed}")
        assert now["version"] == 10 and now["history"] == versions[feed]["history"]
        held[feed] = f"ds1.{now['history']}.8"
        kind, _, _ = first_event(server, feed, held[feed])
        assert kind == "batch", "before the restore, v8 resumes with batches"
    server.stop()

    restore(data, backup)
    restored = start("--data", data)
    histories = {}
    for feed in feeds:
        back = restored.get(f"/feeds/{feed}")
        assert back["history"] != versions[feed]["history"], f"{feed}: a restored copy takes a new history"
        assert back["version"] >= 5
        for step in range(5):
            write(restored, feed, f"c{step}")
        histories[feed] = restored.get(f"/feeds/{feed}")["history"]
        kind, fields, data_ = first_event(restored, feed, held[feed])
        assert kind == "snapshot", f"{feed}: resuming from a v8 of the old timeline must get a snapshot, got {kind} {fields}"
        assert data_["history"] == histories[feed] and fields["id"] == f"ds1.{histories[feed]}.{data_['version']}"
    last = {feed: restored.get(f"/feeds/{feed}")["version"] for feed in feeds}

    server = restored
    for how in ["SIGTERM", "kill -9"]:
        if how == "SIGTERM":
            assert server.stop() == 0
        else:
            server.kill()
        server = start("--data", data)
        for feed in feeds:
            write(server, feed, f"d-{how}")
            kind, fields, data_ = first_event(server, feed, f"ds1.{histories[feed]}.{last[feed]}")
            assert kind == "batch", f"{feed} after {how}: the same history goes on, so a resume gets batches ({fields})"
            assert data_["history"] == histories[feed]
            last[feed] = server.get(f"/feeds/{feed}")["version"]


def test_a_copy_made_by_hand_is_marked_with_restore_in_place(start, tmp_path):
    data, copy = tmp_path / "data", tmp_path / "copy"
    server = start("--data", data)
    server.put("news", document("one"))
    history = server.get("/feeds/news")["history"]
    refused = run_binary("restore", "--in-place", data)
    assert refused.returncode == 2 and "in use by another diffstream" in refused.stderr, refused.stderr
    server.stop()
    shutil.copytree(data, copy)  # by hand, while stopped: unmarked, so unsafe as it is
    assert not (copy / "RESTORED-FROM-BACKUP").exists()
    marked = run_binary("restore", "--in-place", copy)
    assert marked.returncode == 0, marked.stderr
    again = start("--data", copy)
    assert again.get("/feeds/news")["history"] != history
    refused = run_binary("restore", "--data", copy, data)
    assert refused.returncode == 2 and "already holds store files" in refused.stderr, refused.stderr
