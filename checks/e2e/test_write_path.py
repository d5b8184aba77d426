"""The write path's guarantees under the cases issue 39 names: a writer that leaves while its write is being
committed, a big PUT beside small ones on one loop, and actions racing PUTs. They run in every store mode of
the suite (memory, --data, --redis): the commit is what differs between them."""
import json
import socket
import threading

from e2e_helpers import Conn, SSEClient, apply_ops, normalised


def items_snapshot(marker, count=12):
    items = [{"id": f"i{n}", "kind": "row", "model": {"n": n}} for n in range(count)]
    items.insert(len(marker) % count, {"id": "marker", "kind": "row", "model": {"seq": marker}})
    return {"sections": [{"id": "s", "model": None, "items": items}]}


def test_writers_that_leave_mid_commit_leave_contiguous_versions_and_nothing_half_applied(server):
    first = items_snapshot("start")
    assert server.http("PUT", "/feeds/leavers", json_body=first).status == 201
    with SSEClient(server.port, "/feeds/leavers/events") as stream:
        fields, opening = stream.expect_event("snapshot")
        document, version = opening, int(fields["id"].rsplit(".", 1)[1])
        # Each writer sends a whole PUT and leaves at once, without reading the answer: the server is then
        # committing (or about to) for a client that is gone.
        for n in range(30):
            body = json.dumps(items_snapshot(f"left-{n}")).encode()
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                sock.sendall(b"PUT /feeds/leavers HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                sock.shutdown(socket.SHUT_RDWR)
        final = items_snapshot("final")
        answer = server.http("PUT", "/feeds/leavers", json_body=final)
        assert answer.status == 200, answer
        final_version = answer.json()["version"]
        # Every batch up to the final write's: versions one apart, each applying to what came before, and
        # the last one is exactly the final snapshot (a write is in whole or not at all).
        seen = []
        while version < final_version:
            fields, batch = stream.expect_event("batch")
            version += 1
            assert fields["id"].endswith(f".{version}"), (fields, version)
            document = apply_ops(document, batch["ops"])
            seen.append(next(i["model"]["seq"] for i in document["sections"][0]["items"] if i["id"] == "marker"))
        assert version == final_version
        assert normalised(document) == normalised(final)
        assert seen[-1] == "final"
        left = seen[:-1]
        assert len(left) == len(set(left)), f"a write applied twice: {left}"
        assert all(marker.startswith("left-") for marker in left)


def big_snapshot(count):
    return {"sections": [{"id": "big", "model": None,
                          "items": [{"id": f"b{n}", "kind": "row", "model": {"n": n}} for n in range(count)]}]}


def test_a_big_put_does_not_hold_up_small_writes_on_its_loop(start):
    server = start("--loops", "1", "--max-body", str(16 << 20))
    big = json.dumps(big_snapshot(100_000)).encode()
    slow = Conn(server.port, timeout=120)
    slow.request("PUT", "/feeds/bulk", body=big, headers={"Content-Type": "application/json"})
    # While the 100,000 items are parsed and stored, the same loop keeps answering other writers.
    quick = Conn(server.port, timeout=30)
    for n in range(5):
        quick.request("PUT", "/feeds/small", body=json.dumps(items_snapshot(f"small-{n}")).encode())
        assert quick.read_response().status in (200, 201)
    slow.sock.setblocking(False)
    try:
        early = slow.sock.recv(1)
    except BlockingIOError:
        early = None
    assert early is None, "the big PUT was answered before the small ones: it did not overlap them"
    slow.sock.setblocking(True)
    slow.buffer = b""
    # A request pipelined behind the big PUT arrives while it is answered (the server then stops
    # watching the socket's input until the answer is out): it is answered next, in order.
    slow.send(b"GET /feeds/bulk HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = slow.read_response(timeout=120)
    assert reply.status == 201, reply
    assert reply.json()["version"] == 1
    after = slow.read_response(timeout=120)
    assert after.status == 200 and after.json()["version"] == 1 and len(after.json()["sections"][0]["items"]) == 100_000
    assert server.http("GET", "/feeds/small").json()["version"] == 5


def test_actions_racing_puts_each_apply_once(server):
    before = server.http("GET", "/feeds/todo").json()
    errors = []

    def act(n):
        reply = server.http("POST", "/feeds/todo/actions/add", json_body={"title": f"race-{n}"})
        if reply.status != 200:
            errors.append(("action", reply))

    def put(n):
        reply = server.http("PUT", "/feeds/racing", json_body=items_snapshot(f"put-{n}"))
        if reply.status not in (200, 201):
            errors.append(("put", reply))
        # A hosted view model's feed takes no PUT, however the race goes.
        refused = server.http("PUT", "/feeds/todo", json_body=items_snapshot("intruder"))
        if refused.status < 400:
            errors.append(("put on todo", refused))

    threads = [threading.Thread(target=act, args=(n,)) for n in range(20)]
    threads += [threading.Thread(target=put, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    after = server.http("GET", "/feeds/todo").json()
    text = json.dumps(after)
    for n in range(20):
        assert text.count(f'"race-{n}"') == 1, f"race-{n} applied {text.count(f'race-{n}')} times"
    assert "intruder" not in text
    assert after["version"] == before["version"] + 20
    assert server.http("GET", "/feeds/racing").json()["version"] == 20
