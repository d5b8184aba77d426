"""Helpers for the end-to-end tests: raw sockets, an SSE reader, and a strict op-applying oracle.

Nothing here starts servers (that is `conftest.py`); everything here talks to one over real sockets.
"""
import http.client
import json
import os
import pathlib
import re
import socket
import subprocess
import threading
import time
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("DIFFSTREAM_BIN", ROOT / ".build" / "debug" / "diffstream"))
if not BINARY.is_absolute():
    BINARY = ROOT / BINARY


def clean_environment(extra=None):
    """The test runner's environment without any DIFFSTREAM_* variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIFFSTREAM_")}
    env.update(extra or {})
    return env


def run_binary(*args, env=None, timeout=20):
    """Runs diffstream to completion (for flags that make it exit): CompletedProcess with text output."""
    # Without --data, in memory: a run that gets as far as opening the store must not write ./data here.
    if not any(str(arg) == "--data" for arg in args) and "DIFFSTREAM_DATA" not in (env or {}):
        args = ("--data", "none", *args)
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=clean_environment(env), stdin=subprocess.DEVNULL)


def free_port():
    """A port that was free a moment ago (for tests that must restart a server on the same port)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout=10.0, interval=0.05, message="condition"):
    """A bounded poll for things that have no event to wait on (metrics, /proc); returns the value."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = predicate()
        except Exception as error:  # noqa: BLE001 - the thing may be mid-update
            last = error
        if last and not isinstance(last, Exception):
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}; last value: {last!r}")
        time.sleep(interval)


# ----------------------------------------------------------------------------------------------------
# Raw HTTP over a socket


def raw(port, data, timeout=5.0, host="127.0.0.1"):
    """Sends raw bytes and reads until the server closes. Returns (bytes, closed): closed is False if
    the connection was still open when `timeout` ran out."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_to_close(sock, timeout)


def read_to_close(sock, timeout=5.0):
    deadline = time.monotonic() + timeout
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return b"".join(chunks), False
        except ConnectionResetError:
            return b"".join(chunks), True
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


class Response:
    """One parsed HTTP/1.1 response."""

    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value)
        self.body = body

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<Response {self.status} {self.headers} {self.body[:200]!r}>"


def big_state(n, items=40):
    """A snapshot of `items` items of about 1 kB each, all new at every `n`: a feed whose batches fill
    a subscriber's --stream-buffer fast."""
    model = {"text": "y" * 1000}
    return {"sections": [{"id": "a", "model": None, "items": [{"id": f"{n}-{i}", "kind": "k", "model": model} for i in range(items)]}]}


def overflowing_subscriber(server, path, feed="lag"):
    """Opens `path` on a socket with a 4 KiB receive buffer that is not read, then PUTs big states of
    `feed` (which must exist) until the server counts a stream overflow. Returns (socket, last n PUT)."""
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", server.port))
    slow.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    n = 0
    while server.metrics()["diffstream_stream_overflows_total"] == 0:
        n += 1
        server.put(feed, big_state(n))
        assert n < 2000, "the slow subscriber never overflowed"
    return slow, n


def read_stream(sock, until=lambda data: False, timeout=20.0):
    """Reads a raw stream until `until(data)` holds, the server ends it, or `timeout` seconds pass.
    Returns (data, ended): ended is true when the server closed it."""
    sock.settimeout(1)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not until(data):
        try:
            chunk = sock.recv(1 << 20)
        except socket.timeout:
            continue
        if not chunk:
            return data, True
        data += chunk
    return data, False


def stream_events(data):
    """(event, data) pairs of the complete events of a raw (uncompressed) stream after its HTTP head."""
    body = data.split(b"\r\n\r\n", 1)[1].decode(errors="replace")
    events = []
    for block in body.split("\n\n")[:-1]:  # the last piece is not terminated yet
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line and not line.startswith(":"))
        if "data" in fields:
            events.append((fields.get("event"), json.loads(fields["data"])))
    return events


def parse_responses(data, head_only=()):
    """Splits a byte stream into responses (Content-Length framed; 1xx, 204 and 304 have no body).
    `head_only`: indexes of responses to HEAD requests. Returns (responses, leftover bytes)."""
    responses = []
    while True:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            return responses, data
        head = data[:end].decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1])
        headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]
        rest = data[end + 4:]
        length = 0
        if not (100 <= status < 200 or status in (204, 304) or len(responses) in head_only):
            values = [v for k, v in headers if k.lower() == "content-length"]
            length = int(values[0]) if values else len(rest)
        if len(rest) < length:
            return responses, data
        responses.append(Response(status, parts[2] if len(parts) > 2 else "", headers, rest[:length]))
        data = rest[length:]


class AckingWriter(threading.Thread):
    """Writes on one keep-alive connection until the server dies (the kill -9 tests): keeps the last
    acknowledged (version, token) in `acked`, and in `inflight` the token of the write whose answer was
    lost, if any. A subclass says what comes next: `next_write()` -> (method, path, JSON body, token)."""

    def __init__(self, port, acked, on_ack, ok=(200, 201)):
        super().__init__(daemon=True)
        self.port, self.acked, self.on_ack, self.ok = port, acked, on_ack, ok
        self.inflight = None

    def run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            while True:
                method, path, body, token = self.next_write()
                self.inflight = token
                connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = response.read()
                assert response.status in self.ok, (response.status, answer)
                self.acked = (json.loads(answer)["version"], token)
                self.inflight = None
                self.on_ack()
        except (OSError, http.client.HTTPException):
            pass  # the server was killed: the write in flight (if any) has no answer
        finally:
            connection.close()


class Conn:
    """A keep-alive client connection for tests that need to see framing (pipelining, HEAD, 100)."""

    def __init__(self, port, timeout=5.0, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buffer = b""
        self.timeout = timeout
        self.closed = False

    def send(self, data):
        self.sock.sendall(data)

    def request(self, method, path, body=None, headers=None):
        headers = {"Host": "test", **(headers or {})}
        if body is not None:
            headers.setdefault("Content-Length", str(len(body)))
        text = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        self.sock.sendall(text.encode() + (body or b""))

    def read_responses(self, count, head_only=(), timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            responses, _ = parse_responses(self.buffer, head_only)
            if len(responses) >= count or self.closed:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"only {len(responses)} of {count} responses arrived: {self.buffer[:500]!r}")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
            self.buffer += chunk
        responses, self.buffer = parse_responses(self.buffer, head_only)
        return responses

    def read_response(self, head=False, timeout=None):
        responses = self.read_responses(1, head_only=(0,) if head else (), timeout=timeout)
        assert responses, f"no response; buffered {self.buffer[:300]!r}"
        return responses[0]

    def wait_closed(self, timeout=5.0):
        """True if the server closes the connection within `timeout` (whatever else it sends)."""
        data, closed = read_to_close(self.sock, timeout)
        self.buffer += data
        self.closed = closed
        return closed

    def close(self):
        self.sock.close()


# ----------------------------------------------------------------------------------------------------
# Server-Sent Events


class SSEClient:
    """Reads an event stream over a raw socket, block by block, optionally gzip-decoding it on the fly.

    Blocks are parsed per the WHATWG rules (`field: value`, `:` comments, blank-line separated)."""

    def __init__(self, port, path, headers=None, gzip=False, timeout=10.0, host="127.0.0.1", rcvbuf=None, tls=None):
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        if tls:  # an ssl.SSLContext: the stream over HTTPS
            self.sock = tls.wrap_socket(self.sock, server_hostname=host)
        lines = [f"GET {path} HTTP/1.1", "Host: test", "Accept: text/event-stream"]
        if gzip:
            lines.append("Accept-Encoding: gzip")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.raw = b""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.raw:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = self.sock.recv(65536)
            assert chunk, f"closed before the response head: {self.raw!r}"
            self.raw += chunk
        head, rest = self.raw.split(b"\r\n\r\n", 1)
        self.head = head.decode("latin-1")
        self.status = int(self.head.split()[1])
        self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzip and self.header("Content-Encoding") == "gzip" else None
        self.text = ""
        self.closed = False
        self.compressed_bytes = 0
        self._pending = b""
        self._feed(rest)

    def header(self, name):
        for line in self.head.split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None

    def _feed(self, chunk):
        if self.inflater:
            self.compressed_bytes += len(chunk)
            chunk = self.inflater.decompress(chunk)
        data = self._pending + chunk
        try:
            self.text += data.decode()
            self._pending = b""
        except UnicodeDecodeError as error:  # a UTF-8 sequence split across reads
            if len(data) - error.start > 3:
                raise
            self.text += data[:error.start].decode()
            self._pending = data[error.start:]

    def _fill(self, deadline):
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = self.sock.recv(1 << 20)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.closed = True
            return
        self._feed(chunk)

    def next_block(self, timeout=10.0):
        """The next blank-line-terminated block as a dict (`comment` holds comment lines), or None if
        nothing complete arrived within `timeout` or the stream ended."""
        deadline = time.monotonic() + timeout
        while "\n\n" not in self.text:
            if self.closed or time.monotonic() >= deadline:
                return None
            try:
                self._fill(deadline)
            except socket.timeout:
                return None
        block, self.text = self.text.split("\n\n", 1)
        fields = {"comment": []}
        data = []
        for line in block.split("\n"):
            if line.startswith(":"):
                fields["comment"].append(line[1:].strip())
                continue
            key, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if key == "data":
                data.append(value)
            else:
                fields[key] = value
        if data:
            fields["data"] = "\n".join(data)
        return fields

    def next_event(self, timeout=10.0):
        """The next block with a `data` field (heartbeats and bare retry lines are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            block = self.next_block(max(0.0, deadline - time.monotonic()))
            if block is None or "data" in block:
                return block

    def expect_event(self, kind, timeout=10.0):
        """The next event, which must be of `kind`: (fields, parsed data)."""
        event = self.next_event(timeout)
        assert event is not None, f"no {kind} event within {timeout} s (closed={self.closed})"
        assert event.get("event") == kind, f"expected {kind}, got {event}"
        return event, json.loads(event["data"])

    def wait_closed(self, timeout=5.0):
        """Reads (and keeps) whatever arrives until the server closes the stream; True if it did."""
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            try:
                self._fill(deadline)
            except socket.timeout:
                break
        return self.closed

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ----------------------------------------------------------------------------------------------------
# The wire contract as an oracle


class OpError(AssertionError):
    pass


def apply_ops(document, ops):
    """Applies a batch in order to a snapshot document, strictly: every op must be valid at the moment
    it is applied (anchors exist and sit in the target section, ids are not duplicated, and so on).
    Returns a new `{"sections": [...]}`; raises OpError for a batch a client could not apply."""
    sections = [{"id": s["id"], "model": s.get("model"), "items": [
        {"id": i["id"], "kind": i["kind"], "model": i.get("model")} for i in (s.get("items") or [])]}
        for s in document["sections"]]

    def section_index(sid, op):
        for index, section in enumerate(sections):
            if section["id"] == sid:
                return index
        raise OpError(f"{op}: no section {sid!r}")

    def find_item(iid):
        for section in sections:
            for index, item in enumerate(section["items"]):
                if item["id"] == iid:
                    return section, index
        return None, None

    for op in ops:
        kind = op["op"]
        if kind == "deleteSection":
            sections.pop(section_index(op["section"], op))
        elif kind in ("insertSection", "moveSection"):
            if kind == "insertSection":
                new = op["section"]
                if any(s["id"] == new["id"] for s in sections):
                    raise OpError(f"{op}: section {new['id']!r} exists")
                moving = {"id": new["id"], "model": new.get("model"), "items": []}
            else:
                if op["section"] == op["before"]:
                    raise OpError(f"{op}: anchored to itself")
                moving = sections.pop(section_index(op["section"], op))
            position = len(sections) if op["before"] is None else section_index(op["before"], op)
            sections.insert(position, moving)
        elif kind == "updateSection":
            sections[section_index(op["section"], op)]["model"] = op["model"]
        elif kind == "delete":
            section, index = find_item(op["item"])
            if section is None:
                raise OpError(f"{op}: no item {op['item']!r}")
            section["items"].pop(index)
        elif kind in ("insert", "move"):
            if kind == "insert":
                item = {"id": op["item"]["id"], "kind": op["item"]["kind"], "model": op["item"].get("model")}
                if find_item(item["id"])[0] is not None:
                    raise OpError(f"{op}: item {item['id']!r} exists")
            else:
                if op["item"] == op["before"]:
                    raise OpError(f"{op}: anchored to itself")
                section, index = find_item(op["item"])
                if section is None:
                    raise OpError(f"{op}: no item {op['item']!r}")
                item = section["items"].pop(index)
            target = sections[section_index(op["section"], op)]
            if op["before"] is None:
                target["items"].append(item)
            else:
                positions = [i for i, x in enumerate(target["items"]) if x["id"] == op["before"]]
                if not positions:
                    raise OpError(f"{op}: anchor {op['before']!r} is not in section {op['section']!r}")
                target["items"].insert(positions[0], item)
        elif kind == "update":
            section, index = find_item(op["item"])
            if section is None:
                raise OpError(f"{op}: no item {op['item']!r}")
            section["items"][index] = {"id": op["item"], "kind": op["kind"], "model": op["model"]}
        else:
            raise OpError(f"unknown op {kind!r}")
    return {"sections": sections}


def normalised(document):
    """A snapshot without versions or feed names, with omitted models as null: comparable with ==."""
    return [{"id": s["id"], "model": s.get("model"), "items": [
        {"id": i["id"], "kind": i["kind"], "model": i.get("model")} for i in (s.get("items") or [])]}
        for s in document["sections"]]


def check_minimal(before, after, ops):
    """The protocol's minimality promises, checked on one batch from `before` to `after`."""
    old_items = {i["id"]: i for s in normalised(before) for i in s["items"]}
    new_items = {i["id"]: i for s in normalised(after) for i in s["items"]}
    old_sections = {s["id"]: s for s in normalised(before)}
    new_sections = {s["id"]: s for s in normalised(after)}
    deleted = {op["item"] for op in ops if op["op"] == "delete"}
    inserted = {op["item"]["id"] for op in ops if op["op"] == "insert"}
    assert not deleted & inserted, f"deleted and inserted again: {deleted & inserted}"
    assert inserted == set(new_items) - set(old_items), "inserts are exactly the new items"
    removed_with_sections = {i["id"] for sid in set(old_sections) - set(new_sections) for i in old_sections[sid]["items"]}
    assert deleted | (removed_with_sections - set(new_items)) >= set(old_items) - set(new_items)
    assert not deleted & removed_with_sections, "items of a deleted section go with its deleteSection"
    updated = [op["item"] for op in ops if op["op"] == "update"]
    assert len(updated) == len(set(updated)), "one update per item at most"
    for iid in updated:
        assert iid in old_items and (old_items[iid]["kind"], old_items[iid]["model"]) != (new_items[iid]["kind"], new_items[iid]["model"]), \
            f"update of unchanged item {iid}"
    for op in ops:
        if op["op"] == "updateSection":
            assert old_sections[op["section"]]["model"] != new_sections[op["section"]]["model"], f"updateSection of unchanged {op}"
        if op["op"] == "insertSection":
            assert op["section"]["id"] not in old_sections
        if op["op"] == "deleteSection":
            assert op["section"] not in new_sections
    moved = [op["item"] for op in ops if op["op"] == "move"]
    assert len(moved) == len(set(moved)), "each item moves at most once"


def snapshot(*sections, model=True):
    """snapshot(("a", ["1", "2"]), ("b", ["3"])) -> a wire snapshot with simple models."""
    return {"sections": [{"id": sid, "model": {"title": sid} if model else None,
                          "items": [{"id": i, "kind": "card", "model": {"t": i}} for i in items]}
                         for sid, items in sections]}


def parse_metrics(text):
    """Prometheus text -> {"name{labels}": value}."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^(\S+)\s+(\S+)$", line)
        assert match, f"malformed metrics line {line!r}"
        values[match.group(1)] = float(match.group(2))
    return values


# ----------------------------------------------------------------------------------------------------
# Signed tokens (JWT), made here independently of the server's library

import base64  # noqa: E402
import hashlib  # noqa: E402
import hmac as _hmac  # noqa: E402

JWT_SECRET = "e2e-secret-of-at-least-thirty-two-bytes"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_token(payload, secret=JWT_SECRET, header=None, alg="HS256"):
    """An HS256 token (or, with alg="none", an unsigned one) with any header and payload."""
    header = header or {"alg": alg, "typ": "JWT"}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode())
    if alg == "none":
        return signing_input + "."
    key = secret if isinstance(secret, bytes) else secret.encode()
    return signing_input + "." + b64url(_hmac.new(key, signing_input.encode(), hashlib.sha256).digest())


def rights(subscribe=(), publish=(), lifetime=600, nbf=None):
    """A payload with DiffStream rights, valid for `lifetime` seconds from now (negative: expired)."""
    payload = {"exp": int(time.time()) + lifetime, "diffstream": {"subscribe": list(subscribe), "publish": list(publish)}}
    if nbf is not None:
        payload["nbf"] = nbf
    return payload


def rs256_token(payload, private_key_path):
    """An RS256 token signed by `openssl dgst` with a PEM private key."""
    signing_input = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode()) + "." + b64url(json.dumps(payload).encode())
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(private_key_path)], input=signing_input.encode(),
                               capture_output=True, check=True).stdout
    return signing_input + "." + b64url(signature)


def rsa_key_pair(directory):
    """(private key path, public key path): a fresh 2048-bit RSA key made with openssl."""
    private, public = directory / "rsa.pem", directory / "rsa.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(private)],
                   capture_output=True, check=True)
    subprocess.run(["openssl", "pkey", "-in", str(private), "-pubout", "-out", str(public)], capture_output=True, check=True)
    return private, public


# ----------------------------------------------------------------------------------------------------
# The whole suite in --redis mode (issue 26): DIFFSTREAM_E2E_REDIS=1

import atexit as _atexit  # noqa: E402
import shutil as _shutil  # noqa: E402
import tempfile as _tempfile  # noqa: E402
import uuid as _uuid  # noqa: E402

E2E_REDIS = os.environ.get("DIFFSTREAM_E2E_REDIS", "") not in ("", "0")
_e2e_redis = {}


def _e2e_redis_url():
    """DIFFSTREAM_E2E_REDIS_URL, or a redis-server started once for the whole run (stopped at exit)."""
    if "url" not in _e2e_redis:
        url = os.environ.get("DIFFSTREAM_E2E_REDIS_URL")
        if not url:
            executable = _shutil.which("redis-server")
            assert executable, "DIFFSTREAM_E2E_REDIS=1 needs redis-server (apt-get install -y redis-server) or DIFFSTREAM_E2E_REDIS_URL"
            # In memory where there is /dev/shm: these tests are about the API on Redis, not about the disk,
            # and an fsync that stalls past the server's 2 s Redis timeout on a slow disk is an outage.
            directory = _tempfile.mkdtemp(prefix="diffstream-e2e-redis-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            port = free_port()
            process = subprocess.Popen([executable, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
                                        "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
                                        "--logfile", os.path.join(directory, "redis.log")],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

            def stop():
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                _shutil.rmtree(directory, True)
            _atexit.register(stop)

            def pong():
                assert process.poll() is None, f"redis-server exited with {process.returncode}"
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    return sock.recv(64).startswith(b"+PONG")
            wait_until(pong, timeout=10, interval=0.02, message=f"redis-server on port {port}")
            url = f"redis://127.0.0.1:{port}"
        _e2e_redis["url"] = url
    return _e2e_redis["url"]


def e2e_redis_flags(flags, env=None):
    """With DIFFSTREAM_E2E_REDIS=1: `--redis URL --redis-prefix <fresh>` for a server whose test chose
    neither Redis nor a --data directory of its own (tests of the local store keep it); every server gets
    its own prefix, so none sees another's feeds or settings. Otherwise nothing."""
    if not E2E_REDIS:
        return []
    flags = [str(flag) for flag in flags]
    if any(flag == "--redis" or flag.startswith("--redis=") for flag in flags) or "DIFFSTREAM_REDIS" in (env or {}):
        return []
    if "DIFFSTREAM_DATA" in (env or {}):
        return []
    for index, flag in enumerate(flags):
        if flag == "--data" and index + 1 < len(flags) and flags[index + 1] != "none":
            return []
        if flag.startswith("--data=") and flag != "--data=none":
            return []
    return ["--redis", _e2e_redis_url(), "--redis-prefix", f"e2e-{_uuid.uuid4().hex[:12]}"]
