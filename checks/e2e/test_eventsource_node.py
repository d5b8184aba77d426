"""A real third-party SSE client, Debian's node-eventsource, across a server restart on the same port."""
import json
import os
import pathlib
import queue
import shutil
import subprocess
import threading

import pytest

from e2e_helpers import free_port

NODE_MODULES = [p for p in ["/usr/share/nodejs", "/usr/lib/nodejs", "/usr/lib/node_modules"] if os.path.isdir(os.path.join(p, "eventsource"))]
CLIENT = pathlib.Path(__file__).with_name("eventsource_client.js")

pytestmark = pytest.mark.skipif(not shutil.which("node") or not NODE_MODULES, reason="node and node-eventsource are not installed")


class NodeClient:
    def __init__(self, url):
        env = {**os.environ, "NODE_PATH": os.pathsep.join(NODE_MODULES + [os.environ.get("NODE_PATH", "")])}
        self.process = subprocess.Popen(["node", str(CLIENT), url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def next(self, *types, timeout=15):
        """The next line of one of `types` (the others are kept in `seen`)."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no {types} from the node client within {timeout} s; seen {self.seen[-5:]}") from None
            assert line is not None, f"the node client exited: {self.process.stderr.read()}"
            self.seen.append(line)
            if line["type"] in types:
                return line

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def test_node_eventsource_receives_batches_and_resumes_after_a_restart(start):
    port = free_port()
    first = start(port=port)
    client = NodeClient(f"http://127.0.0.1:{port}/feeds/home/events")
    try:
        client.next("open")
        snapshot = client.next("snapshot", "batch")
        assert snapshot["type"] == "snapshot" and snapshot["data"]["version"] == 1
        first.ok("PATCH", "/feeds/home", {"banner": None})
        batch = client.next("snapshot", "batch")
        assert batch["type"] == "batch" and (batch["data"]["from"], batch["data"]["version"]) == (1, 2)
        first.ok("PATCH", "/feeds/home", {"recommendedHeader": {"isFeatured": True}})
        batch = client.next("snapshot", "batch")
        assert batch["data"]["version"] == 3
        last_id = batch["id"]
        assert last_id.endswith(".3")
        # Restart on the same port: the client notices, waits `retry`, and reconnects by itself.
        assert first.stop() == 0
        client.next("error")
        second = start(port=port)
        client.next("open", timeout=10)
        second.wait_log(rf"sse connect #\d+ /feeds/home/events from \S+ last-event-id={last_id.replace('.', '[.]')}")
        # Its id is from another process: a fresh snapshot of the new server's state, not batches.
        event = client.next("snapshot", "batch")
        assert event["type"] == "snapshot" and event["data"]["version"] == 1
        assert [s["id"] for s in event["data"]["sections"]][0] == "banner", "the new process' own state"
        second.ok("PATCH", "/feeds/home", {"banner": None})
        event = client.next("snapshot", "batch")
        assert event["type"] == "batch" and (event["data"]["from"], event["data"]["version"]) == (1, 2)
        assert event["id"].split(".")[1] != last_id.split(".")[1], "a new history"
    finally:
        client.stop()


def test_node_eventsource_resumes_with_only_the_missed_batches_across_a_restart_on_the_same_data(start, tmp_path):
    port = free_port()
    data = tmp_path / "data"
    first = start("--data", data, port=port)
    first.put("kept", {"sections": [{"id": "s", "items": [{"id": "a", "kind": "k"}]}]})
    client = NodeClient(f"http://127.0.0.1:{port}/feeds/kept/events")
    try:
        client.next("open")
        event = client.next("snapshot", "batch")
        assert event["type"] == "snapshot" and event["data"]["version"] == 1
        first.put("kept", {"sections": [{"id": "s", "items": [{"id": "b", "kind": "k"}, {"id": "a", "kind": "k"}]}]})
        event = client.next("snapshot", "batch")
        last_id = event["id"]
        assert event["type"] == "batch" and event["data"]["version"] == 2
        first.kill()  # kill -9: nothing is flushed on the way out
        client.next("error")
        second = start("--data", data, port=port)
        second.put("kept", {"sections": [{"id": "s", "items": [{"id": "a", "kind": "k"}]}]})
        client.next("open", timeout=10)
        second.wait_log(rf"sse connect #\d+ /feeds/kept/events from \S+ last-event-id={last_id.replace('.', '[.]')}")
        # The same history on disk: the batch it missed (2 -> 3), not a snapshot.
        event = client.next("snapshot", "batch")
        assert event["type"] == "batch" and (event["data"]["from"], event["data"]["version"]) == (2, 3), event
        assert event["id"].split(".")[1] == last_id.split(".")[1]
    finally:
        client.stop()
