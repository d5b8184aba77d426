"""Helpers for the end-to-end tests: raw sockets, an SSE reader, an op-applying oracle."""
import socket
import time
import zlib

import os

from harness import ROOT, free_port, wait_for  # noqa: F401  (re-exported for the tests)

ROOT_BIN = os.environ.get("DIFFSTREAM_BIN", str(ROOT / ".build" / "debug" / "diffstream"))


def raw(server, data, read_timeout=5):
    """Sends raw bytes, returns everything read until the server closes (or the timeout)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=read_timeout) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except socket.timeout:
            chunks.append(b"<timeout>")
        return b"".join(chunks)


class SSEClient:
    """Reads an event stream over a raw socket, event by event (optionally gzip-decoding it)."""

    def __init__(self, server, path, headers=None, gzip=False, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
        lines = [f"GET {path} HTTP/1.1", "Host: test", "Accept: text/event-stream"]
        if gzip:
            lines.append("Accept-Encoding: gzip")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, "closed before the response head"
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        self.head = head.decode()
        self.status = int(self.head.split()[1])
        self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzip else None
        self.text = ""
        if self.inflater:
            self.text = self.inflater.decompress(self.buffer).decode()
        else:
            self.text = self.buffer.decode()
        self.closed = False

    def header(self, name):
        for line in self.head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def _fill(self, deadline):
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = self.sock.recv(65536)
        if not chunk:
            self.closed = True
            return
        self.text += self.inflater.decompress(chunk).decode() if self.inflater else chunk.decode()

    def next_block(self, timeout=10):
        """The next blank-line-terminated block (an event, a comment or a retry field), parsed."""
        deadline = time.monotonic() + timeout
        while "\n\n" not in self.text:
            if self.closed or time.monotonic() > deadline:
                return None
            try:
                self._fill(deadline)
            except socket.timeout:
                return None
        block, self.text = self.text.split("\n\n", 1)
        fields = {"comment": []}
        for line in block.split("\n"):
            if line.startswith(":"):
                fields["comment"].append(line[1:].strip())
            else:
                key, _, value = line.partition(":")
                fields[key] = value[1:] if value.startswith(" ") else value
        return fields

    def next_event(self, timeout=10):
        """The next block with a `data` field."""
        deadline = time.monotonic() + timeout
        while True:
            block = self.next_block(max(0.01, deadline - time.monotonic()))
            if block is None or "data" in block:
                return block

    def close(self):
        self.sock.close()


def apply_ops(document, ops):
    """The wire contract's operations, applied in order to a snapshot document (a test oracle)."""
    sections = [{"id": s["id"], "model": s.get("model"), "items": [dict(i) for i in s.get("items") or []]} for s in document["sections"]]

    def section_index(sid):
        return next(i for i, s in enumerate(sections) if s["id"] == sid)

    def find_item(iid):
        for s in sections:
            for index, item in enumerate(s["items"]):
                if item["id"] == iid:
                    return s, index
        raise KeyError(iid)

    for op in ops:
        kind = op["op"]
        if kind == "deleteSection":
            sections.pop(section_index(op["section"]))
        elif kind == "insertSection":
            new = {"id": op["section"]["id"], "model": op["section"].get("model"), "items": []}
            sections.insert(len(sections) if op["before"] is None else section_index(op["before"]), new)
        elif kind == "moveSection":
            moved = sections.pop(section_index(op["section"]))
            sections.insert(len(sections) if op["before"] is None else section_index(op["before"]), moved)
        elif kind == "updateSection":
            sections[section_index(op["section"])]["model"] = op["model"]
        elif kind == "delete":
            s, index = find_item(op["item"])
            s["items"].pop(index)
        elif kind in ("insert", "move"):
            if kind == "insert":
                item = dict(op["item"])
            else:
                s, index = find_item(op["item"])
                item = s["items"].pop(index)
            target = sections[section_index(op["section"])]
            position = len(target["items"]) if op["before"] is None else next(i for i, x in enumerate(target["items"]) if x["id"] == op["before"])
            target["items"].insert(position, item)
        elif kind == "update":
            s, index = find_item(op["item"])
            s["items"][index].update(kind=op["kind"], model=op["model"])
        else:
            raise ValueError(kind)
    return {"sections": sections}


def normalised(document):
    return [{"id": s["id"], "model": s.get("model"), "items": [{"id": i["id"], "kind": i["kind"], "model": i.get("model")} for i in s.get("items") or []]}
            for s in document["sections"]]


def snapshot(*sections):
    """snapshot(("a", ["1", "2"]), ("b", ["3"])) -> a wire snapshot with simple models."""
    return {"sections": [{"id": sid, "model": {"title": sid}, "items": [{"id": i, "kind": "card", "model": {"t": i}} for i in items]}
                         for sid, items in sections]}
