#!/usr/bin/env python3
"""Bytes on the wire with and without gzip, and the cost of compressing per subscriber vs once.

    python3 Benchmarks/wire-bytes.py            (uses .build/release/diffstream)

1. For the home feed (the demo's kind of changes: banner off/on, inserts, moves across sections, title
   updates, the header star) and for a 10,000-item feed (1% of items changed per batch), a subscriber
   receives the snapshot and 10 batches; the raw bytes it reads are counted with and without
   `Accept-Encoding: gzip`.
2. zlib cost for one event to 1,000 subscribers: deflated once (what diffstream does: a fresh raw
   deflate ended with a sync flush, spliced into every stream) vs a persistent deflate stream per
   subscriber (Z_SYNC_FLUSH per event). Measured with Python's zlib (the same libz the server links).
"""
import json
import os
import pathlib
import socket
import sys
import time
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "checks"))
from harness import Server  # noqa: E402

os.environ.setdefault("DIFFSTREAM_BIN", str(pathlib.Path(__file__).resolve().parents[1] / ".build" / "release" / "diffstream"))


def stream_bytes(server, path, gzip, changes):
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{'Accept-Encoding: gzip' + chr(13) + chr(10) if gzip else ''}\r\n".encode())
    sock.settimeout(0.5)
    received = b""

    def drain():
        nonlocal received
        while True:
            try:
                chunk = sock.recv(1 << 20)
            except socket.timeout:
                return
            if not chunk:
                return
            received += chunk

    drain()
    for change in changes:
        change()
        drain()
    sock.close()
    return len(received)


def media(i, title=None):
    return {"id": f"m{i}", "type": "video" if i % 3 == 0 else "image", "title": title or f"Media {i}", "url": f"/media/m{i}.jpg"}


def home_changes(server):
    steps = [{"banner": None}, {"suggested": [media(i) for i in (1, 8, 2, 3, 4)]}, {"recommended": [media(i) for i in (6, 7, 5, 2)]},
             {"suggested": [media(i) for i in (1, 8, 2, 3)], "recommended": [media(i) for i in (4, 6, 7, 5, 2)]},
             {"suggested": [media(1, "Media 1 · 4"), media(8), media(2), media(3)]}, {"recommendedHeader": {"isFeatured": True}},
             {"banner": {"id": "welcome", "title": "Welcome back"}}, {"suggested": [media(1), media(2), media(3)]},
             {"recommendedHeader": {"isFeatured": False}}, {"recommended": [media(i) for i in (2, 4, 5, 6, 7)]}]
    return [lambda step=step: server.request("PATCH", "/feeds/home", step) for step in steps]


def big(version):
    items = [{"id": f"item-{i}", "kind": "card", "model": {"title": f"Item {i}", "n": i + (version if i % 100 == 0 else 0)}} for i in range(10_000)]
    return {"sections": [{"id": "all", "model": {"title": "Everything"}, "items": items}]}


def main():
    rows = []
    for label, path, setup, changes in [
        ("home feed: snapshot + 10 demo-style batches", "/feeds/home/events", lambda s: None, home_changes),
        ("10,000-item feed: snapshot + 10 batches (1% updated each)", "/feeds/big/events", lambda s: s.request("PUT", "/feeds/big", big(0)),
         lambda s: [lambda v=v: s.request("PUT", "/feeds/big", big(v)) for v in range(1, 11)]),
    ]:
        sizes = {}
        for gzip in (False, True):
            server = Server(extra=("--log-level", "error"))
            try:
                setup(server)
                sizes[gzip] = stream_bytes(server, path, gzip, changes(server))
            finally:
                server.stop()
        rows.append((label, sizes[False], sizes[True]))
    print("| stream | plain bytes | gzip bytes | ratio |\n|---|---:|---:|---:|")
    for label, plain, gz in rows:
        print(f"| {label} | {plain:,} | {gz:,} | {gz / plain:.2f} |")

    event = ("event: batch\nid: ds1.0123456789abcdef.42\ndata: " + json.dumps({"feed": "home", "from": 41, "version": 42, "ops": [
        {"op": "move", "item": "suggested-m3", "section": "recommended", "before": "recommended-m5"},
        {"op": "update", "item": "suggested-m1", "kind": "image", "model": {"id": "m1", "title": "Northern lights · 12", "url": "/media/m1.jpg"}}]}) + "\n\n").encode()
    subscribers, rounds = 1000, 20
    started = time.perf_counter()
    for _ in range(rounds):
        block = zlib.compressobj(6, zlib.DEFLATED, -15)
        shared = block.compress(event) + block.flush(zlib.Z_SYNC_FLUSH)
        crc = zlib.crc32(event)
    once = (time.perf_counter() - started) / rounds
    streams = [zlib.compressobj(6, zlib.DEFLATED, -15) for _ in range(subscribers)]
    started = time.perf_counter()
    for _ in range(rounds):
        per = [s.compress(event) + s.flush(zlib.Z_SYNC_FLUSH) for s in streams]
    each = (time.perf_counter() - started) / rounds
    print(f"\none {len(event)}-byte event to {subscribers} subscribers: deflated once {once * 1e3:.3f} ms ({len(shared)} bytes); "
          f"per-subscriber streams {each * 1e3:.1f} ms ({len(per[0])} bytes each after warm-up) -> {each / once:.0f}x more CPU per event")
    _ = crc


if __name__ == "__main__":
    main()
