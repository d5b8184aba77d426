"""Helpers for the `--redis` end-to-end tests (issue 26): a redis-server of the test's own, a tiny RESP
client (no Python package needed), a subscriber that follows a feed in a thread and checks every batch
against its own copy of the snapshot, and writers that keep every acknowledged write.

Nothing here sleeps for timing: waits are on conditions (or bounded polls where there is nothing to
wait on, such as Redis answering PING), and every wait names what it waited for when it fails.
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid

import pytest

from e2e_helpers import SSEClient, OpError, apply_ops, free_port, normalised, wait_until

REDIS_SERVER = shutil.which("redis-server")


def require_redis():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")


def new_prefix():
    """A fresh --redis-prefix, so the tests sharing a Redis never see each other's keys."""
    return f"e2e-{uuid.uuid4().hex[:12]}"


# ----------------------------------------------------------------------------------------------------
# RESP


class RedisError(Exception):
    pass


def _encode(args):
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(f"${len(data)}\r\n".encode() + data + b"\r\n")
    return b"".join(parts)


def _read_reply(stream):
    line = stream.readline()
    if not line:
        raise ConnectionError("Redis closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RedisError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        length = int(rest)
        if length < 0:
            return None
        data = stream.read(length + 2)[:-2]
        return data.decode("utf-8", "replace")
    if kind == b"*":
        count = int(rest)
        return None if count < 0 else [_read_reply(stream) for _ in range(count)]
    raise RedisError(f"unexpected reply {line!r}")


def redis_command(port, *args, timeout=5.0):
    """One command on a fresh connection; returns the decoded reply, raises RedisError for an error."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(_encode(args))
        with sock.makefile("rb") as stream:
            return _read_reply(stream)


# ----------------------------------------------------------------------------------------------------
# redis-server


class RedisServer:
    """A redis-server on a free port with its AOF in `directory` (appendfsync always, no RDB snapshots),
    so that `kill9()` then `start()` restarts it on exactly what it acknowledged."""

    def __init__(self, directory, port=None):
        self.directory = directory
        self.port = port or free_port()
        self.process = None
        self.log_path = os.path.join(directory, "redis.log")
        self.start()

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def start(self, timeout=10.0):
        assert self.process is None or self.process.poll() is not None, "redis-server is already running"
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--enable-debug-command", "yes",
             "--daemonize", "no", "--protected-mode", "no", "--logfile", self.log_path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def ready():
            if self.process.poll() is not None:
                raise AssertionError(f"redis-server exited with {self.process.returncode}; log:\n{self.log_tail()}")
            return self.command("PING", timeout=1.0) == "PONG"  # -LOADING while it reads its AOF
        try:
            wait_until(ready, timeout=timeout, interval=0.02, message=f"redis-server on port {self.port} to answer PING")
        except AssertionError:
            self.kill9()
            raise

    def command(self, *args, timeout=5.0):
        return redis_command(self.port, *args, timeout=timeout)

    def send(self, *args, timeout=30.0):
        """Sends a command (it is on its way when this returns) and returns a function that waits for its reply."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        sock.sendall(_encode(args))

        def reply():
            try:
                with sock.makefile("rb") as stream:
                    return _read_reply(stream)
            finally:
                sock.close()
        return reply

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill9(self):
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def stop(self):
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return "(no log)"


@pytest.fixture
def redis(tmp_path):
    """A redis-server of this test's own (skips the test when redis-server is not installed)."""
    require_redis()
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(str(directory))
    yield server
    server.stop()


class Cluster:
    """DiffStream instances sharing one Redis under one prefix; started through conftest's `start`, so
    each is checked to have survived (or been killed on purpose) and to exit 0 on SIGTERM."""

    def __init__(self, start, redis):
        self.start = start
        self.redis = redis
        self.prefix = new_prefix()
        self.instances = []
        self.followers = []

    def follow(self, feed, instance, last_id=None, **options):
        """A Follower of `feed` connected to `instance`, closed when the test ends (so the instances
        stop without waiting for open streams)."""
        follower = Follower(feed, **options)
        self.followers.append(follower)
        return follower.connect(instance, last_id)

    def close_followers(self):
        for follower in self.followers:
            follower.close()

    def flags(self):
        return ["--redis", self.redis.url, "--redis-prefix", self.prefix]

    def add(self, *flags, env=None):
        instance = self.start(*self.flags(), *flags, env=env)
        self.instances.append(instance)
        return instance

    def launch(self, count, *flags):
        return [self.add(*flags) for _ in range(count)]


@pytest.fixture
def cluster(redis, start):
    """Set up after `redis` and torn down before it: the instances stop while their Redis still runs."""
    instances = Cluster(start, redis)
    yield instances
    instances.close_followers()


# ----------------------------------------------------------------------------------------------------
# A subscriber that checks every batch


class Follower:
    """Follows one feed on `GET /feeds/{feed}/events` in a thread and applies every batch to its own copy.

    A batch of another history, or whose `from` is not the version held, is a gap: recorded in `errors`
    (the tests assert there are none). A snapshot replaces the copy (a resync); `log` records every
    event as (kind, history, version, connection number), so a test can say where snapshots may be."""

    def __init__(self, feed, name=None, keep=False):
        self.feed = feed
        self.name = name or f"follower of {feed}"
        self.keep = keep
        self.changed = threading.Condition()
        self.history = self.version = self.document = None
        self.last_id = None
        self.log = []
        self.errors = []
        self.notices = []  # (kind, data, connection) of events other than snapshot and batch
        self.docs = {}  # (history, version) -> normalised sections, with keep=True
        self.connection = 0
        self.connected_at = None  # the connection of the last snapshot or batch
        self.client = None
        self.thread = None
        self.open = False

    def seed(self, history, version, document):
        """Starts from a state known elsewhere (to audit a resume from it)."""
        self.history, self.version = history, version
        self.document = {"sections": document["sections"]}
        self.last_id = f"ds1.{history}.{version}"
        if self.keep:
            self.docs[(history, version)] = normalised(self.document)

    def connect(self, server, last_id=None, timeout=10.0):
        """Opens the stream on `server` (with `Last-Event-ID: last_id` if given); asserts 200."""
        self.close()
        headers = {"Last-Event-ID": last_id} if last_id else {}
        client = SSEClient(server.port, f"/feeds/{self.feed}/events", headers=headers, timeout=timeout)
        assert client.status == 200, f"{self.name}: GET /feeds/{self.feed}/events -> {client.head!r} {client.text[:300]!r}"
        with self.changed:
            self.connection += 1
            self.client = client
            self.open = True
            self.log.append(("connected", None, None, self.connection))
        self.thread = threading.Thread(target=self._run, args=(client, self.connection), daemon=True)
        self.thread.start()
        return self

    def resume(self, server):
        """Reconnects to `server` with the last id seen, as a client does after losing its stream."""
        assert self.last_id, f"{self.name}: no id to resume from"
        return self.connect(server, self.last_id)

    def close(self):
        client, thread = self.client, self.thread
        self.client = self.thread = None
        if client is not None:
            try:
                client.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if thread is not None:
            thread.join(5)
        if client is not None:
            client.close()

    def _run(self, client, connection):
        while self.client is client:
            try:
                block = client.next_block(timeout=0.5)
            except (OSError, ValueError):
                break
            if block is None:
                if client.closed:
                    break
                continue
            if "data" in block:
                self._event(block, connection)
        with self.changed:
            self.log.append(("closed", self.history, self.version, connection))
            if self.client is client or self.client is None:
                self.open = False
            self.changed.notify_all()

    def _event(self, block, connection):
        kind = block.get("event", "message")
        try:
            data = json.loads(block["data"])
        except ValueError:
            with self.changed:
                self.errors.append(f"connection {connection}: data is not JSON: {block!r}")
                self.changed.notify_all()
            return
        with self.changed:
            if "id" in block:
                self.last_id = block["id"]
            if kind == "snapshot":
                if self.connected_at == connection and data["history"] == self.history and data["version"] < self.version:
                    self.errors.append(f"connection {connection}: a snapshot of version {data['version']} after version {self.version} "
                                       f"on the same stream: it went back (batch {self.version} is sent again after it)")
                self.connected_at = connection
                self.history, self.version = data["history"], data["version"]
                self.document = {"sections": data["sections"]}
                self._check_id(block, connection)
                if self.keep:
                    self.docs[(self.history, self.version)] = normalised(self.document)
            elif kind == "batch":
                self.connected_at = connection
                problem = None
                if self.history is None:
                    problem = "a batch before any snapshot"
                elif data["history"] != self.history:
                    problem = f"a batch of history {data['history']} while holding history {self.history}"
                elif data["from"] != self.version:
                    problem = f"a gap: holding version {self.version}, got a batch from {data['from']}"
                elif data["version"] != data["from"] + 1:
                    problem = f"a batch from {data['from']} to {data['version']} (not + 1)"
                if problem:
                    self.errors.append(f"connection {connection}: {problem} (batch {data['history']} {data['from']}->{data['version']})")
                else:
                    try:
                        self.document = apply_ops(self.document, data["ops"])
                    except OpError as error:
                        self.errors.append(f"connection {connection}: batch {data['from']}->{data['version']} does not apply: {error}")
                    self.version = data["version"]
                    self._check_id(block, connection)
                    if self.keep:
                        self.docs[(self.history, self.version)] = normalised(self.document)
            else:
                if data.get("feed") != self.feed:
                    self.errors.append(f"connection {connection}: event: {kind} names feed {data.get('feed')!r}, not {self.feed!r}")
                if "id" in block:
                    self.errors.append(f"connection {connection}: event: {kind} carries an id ({block['id']!r})")
                self.notices.append((kind, data, connection))
            self.log.append((kind, data.get("history"), data.get("version"), connection))
            self.changed.notify_all()

    def _check_id(self, block, connection):
        expected = f"ds1.{self.history}.{self.version}"
        if block.get("id") != expected:
            self.errors.append(f"connection {connection}: id {block.get('id')!r}, expected {expected!r}")

    # Waiting ------------------------------------------------------------------------------------

    def describe(self):
        return (f"{self.name}: holding {self.history}.{self.version}, connection {self.connection} "
                f"{'open' if self.open else 'closed'}; last events {self.log[-10:]}; errors {self.errors[:5]}")

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                value = predicate()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{what} not within {timeout} s; {self.describe()}")
                self.changed.wait(remaining)

    def wait_version(self, version, timeout=15.0, history=None):
        return self.wait(lambda: self.version is not None and self.version >= version and (history is None or self.history == history),
                         timeout, f"version {version}" + (f" of history {history}" if history else ""))

    def mark(self):
        with self.changed:
            return len(self.log)

    def wait_event(self, kind, since=0, timeout=10.0):
        """The first logged event of `kind` at or after log index `since`: (kind, history, version, connection)."""
        def found():
            return next((entry for entry in self.log[since:] if entry[0] == kind), None)
        return self.wait(found, timeout, f"event: {kind}")

    def wait_closed(self, timeout=10.0):
        return self.wait(lambda: not self.open, timeout, "the end of the stream")

    def kinds(self, since=0, connection=None):
        with self.changed:
            return [entry[0] for entry in self.log[since:] if connection is None or entry[3] == connection]

    def snapshot_count(self, connection=None):
        return self.kinds(connection=connection).count("snapshot")

    def resyncs(self):
        """Each snapshot after the first of a connection, as "held H, got a snapshot of S" with the
        events around it (kind, version). A snapshot older than the version held is also an error."""
        with self.changed:
            found, held, first = [], None, set()
            for index, (kind, _, version, connection) in enumerate(self.log):
                if kind == "snapshot":
                    if connection in first:
                        around = [(k, v) for k, _, v, _ in self.log[max(0, index - 3):index + 4]]
                        found.append(f"held {held}, got a snapshot of {version}: {around}")
                    first.add(connection)
                if kind in ("snapshot", "batch"):
                    held = version
            return found


# ----------------------------------------------------------------------------------------------------
# Writers that keep every acknowledged write


def random_document(rng, stamp):
    """A random snapshot that always differs from any other (its `stamp` item), so every PUT is a batch."""
    names = rng.sample(["A", "B", "C", "D"], rng.randint(1, 4))
    sections = [{"id": name, "model": {"title": name, "n": rng.randint(0, 2)}, "items": []} for name in names]
    for n in rng.sample(range(24), rng.randint(0, 14)):
        rng.choice(sections)["items"].append({"id": f"i{n}", "kind": "row", "model": {"v": rng.randint(0, 3)}})
    sections[0]["items"].insert(rng.randint(0, len(sections[0]["items"])), {"id": "stamp", "kind": "stamp", "model": {"w": stamp}})
    return {"sections": sections}


class Writers:
    """`threads` threads PUT distinct random snapshots of `feeds` on random instances (from `targets()`)
    until `stop()` or `per_thread` writes each. Every 2xx is kept in `acks` as (feed, version, sections);
    other answers in `refusals` as (status, body); connection errors in `failures`."""

    def __init__(self, targets, feeds, threads=3, seed=26, per_thread=None, headers=None):
        self.targets = targets if callable(targets) else (lambda: targets)
        self.feeds = feeds
        self.per_thread = per_thread
        self.headers = headers or {}
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.acks = []
        self.refusals = []
        self.failures = []
        self.thread_errors = []
        self.threads = [threading.Thread(target=self._run, args=(n, random.Random(seed * 1000 + n)), daemon=True)
                        for n in range(threads)]
        for thread in self.threads:
            thread.start()

    def _run(self, number, rng):
        count = 0
        try:
            while not self.stopping.is_set() and (self.per_thread is None or count < self.per_thread):
                count += 1
                feed = rng.choice(self.feeds)
                document = random_document(rng, f"{number}.{count}")
                instance = rng.choice(self.targets())
                try:
                    reply = instance.http("PUT", f"/feeds/{feed}", json_body=document, headers=self.headers, timeout=20)
                except (OSError, http.client.HTTPException) as error:
                    with self.changed:
                        self.failures.append(repr(error))
                        self.changed.notify_all()
                    self.stopping.wait(0.02)  # that instance is gone: no busy loop while it is
                    continue
                with self.changed:
                    if 200 <= reply.status < 300:
                        body = reply.json()
                        self.acks.append((feed, body["version"], normalised(document), body["ops"]))
                    else:
                        self.refusals.append((reply.status, reply.body.decode("utf-8", "replace")))
                    self.changed.notify_all()
                if not 200 <= reply.status < 300:
                    self.stopping.wait(0.02)  # Redis is away: no busy loop while it is
        except Exception as error:  # noqa: BLE001 - reported by stop()
            with self.changed:
                self.thread_errors.append(repr(error))
                self.changed.notify_all()

    def count(self):
        with self.changed:
            return len(self.acks)

    def wait_acks(self, count, timeout=20.0):
        deadline = time.monotonic() + timeout
        with self.changed:
            while len(self.acks) < count:
                remaining = deadline - time.monotonic()
                assert remaining > 0, (f"only {len(self.acks)} of {count} writes acknowledged within {timeout} s; "
                                       f"refusals {self.refusals[-3:]}, failures {self.failures[-3:]}, errors {self.thread_errors}")
                self.changed.wait(remaining)

    def wait_refusals(self, count, timeout=20.0):
        deadline = time.monotonic() + timeout
        with self.changed:
            while len(self.refusals) < count:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"only {len(self.refusals)} of {count} refused writes within {timeout} s; acks {len(self.acks)}"
                self.changed.wait(remaining)

    def stop(self, timeout=30.0):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout)
            assert not thread.is_alive(), f"a writer did not finish within {timeout} s"
        assert not self.thread_errors, f"writer threads failed: {self.thread_errors}"

    def join(self, timeout=60.0):
        for thread in self.threads:
            thread.join(timeout)
            assert not thread.is_alive(), f"a writer did not finish within {timeout} s"
        assert not self.thread_errors, f"writer threads failed: {self.thread_errors}"

    def last_version(self, feed):
        return max(version for f, version, _, _ in self.acks if f == feed)
