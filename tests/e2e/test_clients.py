"""A real third-party SSE client: Debian's node-eventsource."""
import json
import os
import pathlib
import queue
import subprocess
import threading

from e2e_helpers import free_port, snapshot

NODE_PATH = os.pathsep.join(p for p in ["/usr/share/nodejs", "/usr/lib/nodejs", os.environ.get("NODE_PATH", "")] if p)


def test_node_eventsource_receives_batches_and_resumes_after_a_restart(start):
    port = free_port()
    first = start("--port", str(port))
    first.request("PUT", "/feeds/n", snapshot(("a", ["1"])))
    client = subprocess.Popen(["node", str(pathlib.Path(__file__).with_name("eventsource_client.js")), f"http://127.0.0.1:{port}/feeds/n/events"],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "NODE_PATH": NODE_PATH})
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(line)) for line in client.stdout], daemon=True).start()

    def next_event(kind=None):
        while True:
            event = lines.get(timeout=15)
            if event["type"] != "error" and (kind is None or event["type"] == kind):
                return event

    try:
        assert next_event()["type"] == "snapshot"
        first.request("PUT", "/feeds/n", snapshot(("a", ["1", "2"])))
        batch = next_event()
        assert batch["type"] == "batch" and batch["data"]["version"] == 2
        last_id = batch["id"]
        first.process.terminate()
        assert first.process.wait(10) == 0
        second = start("--port", str(port))
        second.request("PUT", "/feeds/n", snapshot(("b", ["9"])))
        event = next_event("snapshot")  # a foreign history: a fresh snapshot
        assert event["data"]["sections"][0]["id"] == "b"
        second.wait_log(f"sse connect .* last-event-id={last_id}")  # it resumed with its Last-Event-ID
        second.request("PUT", "/feeds/n", snapshot(("b", ["9", "8"])))
        assert next_event()["data"]["version"] == 2
    finally:
        client.kill()
