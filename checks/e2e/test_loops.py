"""Several event loops (`--loops N`): connections spread over all of them, every subscriber on every loop
gets every batch in order, TLS and gzip work on each loop, churn leaves nothing behind, and a graceful
shutdown ends every loop."""
import json
import signal
import ssl
import subprocess
import time

import pytest

from e2e_helpers import Conn, SSEClient, apply_ops, normalised, parse_metrics, snapshot, wait_until

LOOPS = 3


def per_loop(metrics, loops=LOOPS):
    return [metrics[f'diffstream_loop_connections_open{{loop="{i}"}}'] for i in range(loops)]


def test_subscribers_on_every_loop_each_get_every_batch_in_order(start):
    server = start("--loops", str(LOOPS))
    server.put("spread", snapshot(("a", ["0"])))
    clients = [SSEClient(server.port, "/feeds/spread/events", gzip=i % 2 == 1) for i in range(4 * LOOPS)]
    documents = []
    for client in clients:
        _, document = client.expect_event("snapshot")
        documents.append(document)
    counts = per_loop(server.metrics())
    assert all(count >= 4 for count in counts), f"connections per loop: {counts}"
    final = None
    for n in range(1, 16):
        final = server.put("spread", snapshot(("a", [str(i) for i in range(n + 1)])))["version"]
    for index, client in enumerate(clients):
        document = documents[index]
        while document["version"] < final:
            _, batch = client.expect_event("batch")
            assert batch["from"] == document["version"], f"subscriber {index}: a batch out of order"
            document = {**apply_ops(document, batch["ops"]), "version": batch["version"]}
        assert normalised(document) == normalised(server.get("/feeds/spread")), f"subscriber {index} did not converge"
    for client in clients:
        client.close()


def test_a_fan_out_wider_than_a_slice_keeps_each_subscribers_order_to_the_end(start):
    """A loop writes a fan-out 256 subscribers per turn and serves other work in between; the batches that
    follow it, and the end of each stream after a DELETE, must never overtake it for any subscriber."""
    server = start("--loops", "2", "--max-connections-per-ip", "0", "--max-connections", "2000")
    server.put("wide", snapshot(("a", ["0"])))
    clients = [SSEClient(server.port, "/feeds/wide/events") for _ in range(1100)]
    for client in clients:
        client.expect_event("snapshot")
    counts = per_loop(server.metrics(), loops=2)
    assert min(counts) > 256, f"every loop needs more subscribers than one slice: {counts}"
    for n in range(1, 6):  # back to back: later fan-outs queue behind the slices of earlier ones
        server.put("wide", snapshot(("a", [str(i) for i in range(n + 1)])))
    assert server.http("DELETE", "/feeds/wide").status == 204
    for index, client in enumerate(clients):
        versions = []
        while True:
            event = client.next_event(timeout=20)
            assert event is not None, f"subscriber {index}: the stream stalled after versions {versions}"
            if event.get("event") == "deleted":
                break
            assert event.get("event") == "batch", f"subscriber {index}: {event}"
            versions.append(json.loads(event["data"])["version"])
        assert versions == [2, 3, 4, 5, 6], f"subscriber {index}: batches {versions}, then deleted"
        assert client.wait_closed(10), f"subscriber {index}: the stream did not end after event: deleted"
        client.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls-loops")
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def test_tls_and_gzip_streams_work_on_every_loop(start, certificate):
    cert, key = certificate
    server = start("--loops", str(LOOPS), "--tls-cert", cert, "--tls-key", key)
    context = ssl.create_default_context(cafile=str(cert))
    clients = [SSEClient(server.port, "/feeds/week/events", gzip=i % 2 == 0, tls=context) for i in range(2 * LOOPS)]
    for client in clients:
        client.expect_event("snapshot")
    assert {client.inflater is not None for client in clients} == {True, False}, "gzip and plain streams"
    # The metrics request goes over TLS too; every loop holds some of the streams.
    reply = subprocess.run(["curl", "-sS", "--cacert", str(cert), f"https://127.0.0.1:{server.port}/metrics"],
                           capture_output=True, text=True, timeout=10)
    counts = per_loop(parse_metrics(reply.stdout))
    assert all(count >= 2 for count in counts), f"connections per loop: {counts}"
    for client in clients:
        client.close()


@pytest.mark.parametrize("loops", ["1", str(LOOPS)])
def test_3000_connects_and_disconnects_across_loops_leak_nothing(start, loops):
    # Closes are noticed a moment after the client makes them: without the per-address cap, a busy
    # machine cannot make this test about the cap.
    server = start("--loops", loops, "--log-level", "warning", "--max-connections-per-ip", "0")
    fds_before = server.open_fds()
    for i in range(3000):
        conn = Conn(server.port)
        if i % 3 == 0:
            conn.request("GET", "/healthz")
            assert conn.read_response().status == 200
        elif i % 3 == 1:
            conn.send(b"GET /feeds/week/events HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.close()
    # Each metrics request is a connection of its own, and the previous one's close is noticed a moment
    # later: wait for one reading where the total and the loops' counts are both back to this request.
    def settled():
        metrics = server.metrics()
        return metrics["diffstream_connections_open"] == 1 and sum(per_loop(metrics, int(loops))) == 1 and metrics
    metrics = wait_until(settled, message="every loop let go of its connections (one left: this request)")
    assert metrics["diffstream_connections_accepted_total"] >= 3000
    wait_until(lambda: server.metrics()["diffstream_event_streams_open"] == 0, message="no event stream left open")
    wait_until(lambda: server.metrics()['diffstream_feed_subscribers{feed="week"}'] == 0, message="no subscriber left")
    wait_until(lambda: server.open_fds() <= fds_before + 2, message=f"descriptors back near {fds_before}")


def test_a_graceful_shutdown_ends_every_loop(start):
    server = start("--loops", str(LOOPS))
    streams = [SSEClient(server.port, "/feeds/home/events", gzip=i % 2 == 1) for i in range(2 * LOOPS)]
    for client in streams:
        client.expect_event("snapshot")
    assert all(count >= 2 for count in per_loop(server.metrics()))
    idle = [Conn(server.port) for _ in range(LOOPS)]
    for conn in idle:
        conn.request("GET", "/healthz")
        assert conn.read_response().status == 200
    started = time.monotonic()
    server.send_signal(signal.SIGTERM)
    for client in streams:
        assert client.wait_closed(5), "a stream was not ended"
        if client.inflater:
            assert client.inflater.eof, "a gzip stream ends as a complete gzip member"
    for conn in idle:
        assert conn.wait_closed(5), "an idle connection was not closed"
    assert server.process.wait(timeout=max(0.1, 5 - (time.monotonic() - started))) == 0
    server.wait_log(r"shut down")
