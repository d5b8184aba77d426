#!/usr/bin/env python3
"""A home feed per user, arriving at a steady rate, against nginx + nchan (issue 38, item 8).

Users arrive at --rate per second until --users are connected, each subscribing to their own home feed:

  diffstream  `GET /feeds/home.<user>/events`: the server's family `home` makes the member with its loader
              on first use and streams `event: snapshot` first (`--data none --examples home`).
  nchan       nginx + nchan, one channel per user (Benchmarks/nchan/nginx-family.conf.template). On a
              user's arrival this script, as the loader, POSTs the user's home document to `/pub/<user>`
              (keep-alive publisher connections); once nchan has answered, the user subscribes to
              `/sub/<user>` (eventsource) and gets the stored message first. The document is the data
              of a real `home.u00000` snapshot from DiffStream with the user's name put in (same size).
              Publish-then-subscribe is what a loader does (it makes the user's feed when they arrive, and
              the user's stream then reads it); "subscribe" for nchan is the moment the subscriber's
              connection is opened, after the publish, and "arrival" is the publish's start.

Per side and round (each side a fresh server; which side goes first alternates by round):
  memory per user     (server memory once all --users have their first snapshot − the memory before the
                      first arrival) ÷ users: VmRSS, and Pss from /proc/PID/smaps_rollup (nginx: master and
                      workers summed; Pss splits nchan's shared memory between them, RSS counts it in each)
  given back          all users disconnect; then this script awaits the server's own count of what is live
                      reaching 0 (diffstream: `diffstream_family_live` on /metrics, after --idle seconds
                      without a stream; nchan: stored messages, channels and subscribers on /status, after
                      the messages' timeout, which is the arrival time + --idle + 5 s, so that every
                      user's message is still stored at the --users mark) and reads the memory again:
                      back = memory at --users − memory after, left = memory after − memory before
  first snapshot      p50 and p99 of the time from subscribe (the subscriber's connect) to the end of the
                      first snapshot event (nchan: the first `data:` event), while users arrive; for nchan
                      also from arrival (the publish's start)
  server CPU per user utime + stime (/proc/PID/stat) from the first arrival to the --users mark ÷ users
  load tool CPU       this script's own user + system time over the same window, and in % of the wall
                      time: one core is the most it can use, well under it means it does not set the
                      pace; `late` is how far behind schedule the last arrival was opened
Prints a RESULT line per side per round, then a markdown table of the medians over rounds with the ratio
DiffStream ÷ nchan.

    python3 Benchmarks/family-arrival.py                                  # 10,000 users at 500/s, 3 rounds
    python3 Benchmarks/family-arrival.py --users 2000 --rounds 1 --idle 2  # a smoke run
    DIFFSTREAM=/work/bench-bin/diffstream python3 Benchmarks/family-arrival.py --rounds 3 --idle 5

Env/flags: --binary (DIFFSTREAM; default .build/release/diffstream, built with `swift build -c release
--static-swift-stdlib --product diffstream`), --users (10000), --rate (500 per second), --rounds (ROUNDS;
3), --idle (seconds: diffstream's --family-idle, nchan's message timeout beyond the arrival; 5), --sides
(diffstream,nchan), --publishers (8 keep-alive connections for nchan's loader), --nginx-workers (auto:
one per core), --diffstream-args ("--compression off", say), --keep-logs.
Diagnostics of memory not given back: --waves N (N waves of the same users on one server: the second's
growth is what the server did not reuse of what the first left) and --malloc-trim (at the end, glibc's
malloc_trim(0) in each server process through gdb, then the memory again: what was free in the allocator
but kept).
Opens one connection per user from 127.0.0.1, so the open-file limit is raised to 20,000 (`ulimit -n
20000`: the most a process gets here), which the servers inherit. Needs nginx with libnginx-mod-nchan
(and gdb for --malloc-trim); standard library only.
"""
import argparse
import errno
import http.client
import math
import os
import re
import resource
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HZ = os.sysconf("SC_CLK_TCK")
TEMPLATE_USER = "u00000"


# --- the servers' processes ---------------------------------------------------------------------------

def children(pid):
    """The pids whose parent is `pid` (nginx's workers)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(name))
    return found


def memory_kib(pids):
    """(VmRSS, Pss) summed over the processes, in KiB."""
    rss = pss = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as status:
            rss += next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            pss += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
    return rss, pss


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total


def tool_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def http_get(port, path, headers=None, timeout=10):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path, headers=headers or {})
        reply = connection.getresponse()
        return reply.status, reply.read().decode()
    finally:
        connection.close()


def await_condition(describe, check, timeout, interval=0.2):
    """Asks `check()` (the server's own count, over HTTP) until it is true; the time it took."""
    start = time.monotonic()
    while True:
        value = check()
        if value is True:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"{describe}: not reached in {timeout:.0f} s (last: {value})")
        time.sleep(interval)


class DiffStream:
    name = "diffstream"

    def __init__(self, binary, users, idle, work, extra=()):
        self.log = open(os.path.join(work, "diffstream.log"), "a")
        args = [binary, "--host", "127.0.0.1", "--port", "0", "--data", "none", "--examples", "home",
                "--public", os.path.join(work, "public"), "--max-connections", str(users + 1000),
                "--max-connections-per-ip", "0", "--family-idle", str(idle), "--log-level", "warning", *extra]
        os.makedirs(os.path.join(work, "public"), exist_ok=True)
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        self.port = None
        announced = threading.Event()

        def drain():  # the announcement gives the port; the rest of stderr goes to the log
            for line in self.process.stderr:
                self.log.write(line)
                self.log.flush()
                match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if match and self.port is None:
                    self.port = int(match.group(1))
                    announced.set()
            announced.set()

        threading.Thread(target=drain, daemon=True).start()
        if not announced.wait(30) or self.port is None:
            self.process.kill()
            raise RuntimeError(f"{binary} did not say where it listens (see {self.log.name})")
        self.pids = [self.process.pid]

    def metrics(self):
        status, text = http_get(self.port, "/metrics")
        values = {}
        for line in text.splitlines():
            match = re.match(r'(diffstream_family_\w+|diffstream_\w*(?:connections|streams|subscribers)\w*)(\{[^}]*\})? ([0-9.e+-]+)$', line)
            if match:
                values[match.group(1) + (match.group(2) or "")] = float(match.group(3))
        return values

    def live(self):
        return int(self.metrics().get('diffstream_family_live{family="home"}', 0))

    def ready_check(self, users):
        live = self.live()
        return True if live == users else f"diffstream_family_live {live}"

    def empty_check(self):
        live = self.live()
        return True if live == 0 else f"diffstream_family_live {live}"

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class Nchan:
    name = "nchan"

    def __init__(self, workers, message_timeout, work):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.dir = os.path.join(work, "nginx")
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "body"))
        with open(os.path.join(ROOT, "Benchmarks/nchan/nginx-family.conf.template")) as template:
            conf = template.read()
        for key, value in {"@DIR@": self.dir, "@PORT@": str(self.port), "@WORKERS@": str(workers),
                           "@MESSAGE_TIMEOUT@": str(message_timeout)}.items():
            conf = conf.replace(key, value)
        with open(os.path.join(self.dir, "nginx.conf"), "w") as out:
            out.write(conf)
        self.process = subprocess.Popen(["nginx", "-c", os.path.join(self.dir, "nginx.conf"), "-p", self.dir],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(work, "nginx.log"), "a"))
        expected = os.cpu_count() if workers == "auto" else int(workers)

        def up():
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: see {self.dir}/error.log")
            try:
                status, _ = http_get(self.port, "/status", timeout=2)
            except OSError as error:
                return str(error)
            return True if status == 200 and len(children(self.process.pid)) >= expected else f"status {status}"

        await_condition("nginx answers", up, 30, interval=0.05)
        self.pids = [self.process.pid] + children(self.process.pid)

    def status(self):
        _, text = http_get(self.port, "/status")
        return {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in text.splitlines() if ":" in line)}

    def ready_check(self, users):
        status = self.status()
        stored, subscribers = int(status["stored messages"]), int(status["subscribers"])
        return True if stored == users and subscribers == users else f"stored {stored}, subscribers {subscribers}"

    def empty_check(self):
        status = self.status()
        counts = [int(status[key]) for key in ("stored messages", "channels", "subscribers")]
        return True if counts == [0, 0, 0] else f"stored messages, channels, subscribers: {counts}"

    def stop(self):
        self.process.send_signal(3)  # SIGQUIT: graceful
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# --- the load: one selector loop ----------------------------------------------------------------------

class Subscriber:
    """One user's event stream: connects, sends its GET, reads until the first event with data (for
    diffstream, `event: snapshot`), and then reads and drops what comes (heartbeats)."""
    __slots__ = ("user", "sock", "request", "arrived", "subscribed", "first", "buffer", "headers_done", "state", "error")

    def __init__(self, user, request, arrived):
        self.user, self.request, self.arrived = user, request, arrived
        self.subscribed = self.first = None
        self.buffer = bytearray()
        self.headers_done = False
        self.state = "connecting"
        self.error = None


class Publisher:
    """A keep-alive connection of nchan's loader: one POST at a time."""
    __slots__ = ("sock", "buffer", "user", "started")

    def __init__(self, sock):
        self.sock, self.buffer, self.user, self.started = sock, bytearray(), None, None


class Load:
    def __init__(self, side, port, users, rate, documents, publishers, snapshot_marker):
        self.side, self.port, self.users, self.rate = side, port, users, rate
        self.documents = documents  # user index -> bytes to publish (nchan), or None
        self.marker = snapshot_marker  # a block must contain this to count as the first snapshot
        self.selector = selectors.DefaultSelector()
        self.subscribers = []
        self.done = self.failed = 0
        self.errors = {}
        self.late = 0.0
        self.pending = []  # users waiting for a free publisher
        self.idle_publishers = []
        for _ in range(publishers if documents is not None else 0):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setblocking(False)
            publisher = Publisher(sock)
            self.selector.register(sock, selectors.EVENT_READ, publisher)
            self.idle_publishers.append(publisher)

    @staticmethod
    def user_name(index):
        return f"u{index:05d}"

    def fail(self, subscriber, reason):
        subscriber.state = "failed"
        subscriber.error = reason
        self.errors[reason] = self.errors.get(reason, 0) + 1
        self.failed += 1
        try:
            self.selector.unregister(subscriber.sock)
        except (KeyError, ValueError):
            pass
        subscriber.sock.close()

    def subscribe(self, subscriber, now):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        subscriber.sock = sock
        subscriber.subscribed = now
        code = sock.connect_ex(("127.0.0.1", self.port))
        if code not in (0, errno.EINPROGRESS):
            self.fail(subscriber, f"connect {errno.errorcode.get(code, code)}")
            return
        self.selector.register(sock, selectors.EVENT_WRITE, subscriber)

    def arrive(self, index, now):
        name = self.user_name(index)
        if self.side == "diffstream":
            path = f"/feeds/home.{name}/events"
        else:
            path = f"/sub/{name}"
        request = f"GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".encode()
        subscriber = Subscriber(index, request, now)
        self.subscribers.append(subscriber)
        if self.documents is None:
            self.subscribe(subscriber, now)
        else:
            self.pending.append(subscriber)
            self.publish_next()

    def publish_next(self):
        while self.pending and self.idle_publishers:
            subscriber, publisher = self.pending.pop(0), self.idle_publishers.pop()
            body = self.documents(subscriber.user)
            head = (f"POST /pub/{self.user_name(subscriber.user)} HTTP/1.1\r\nHost: bench\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
            publisher.user, publisher.started = subscriber, time.monotonic()
            publisher.sock.sendall(head + body)  # a few kB into an empty socket buffer: does not block

    def on_publisher(self, publisher, now):
        data = publisher.sock.recv(65536)
        if not data:
            raise RuntimeError("nchan closed a publisher connection")
        publisher.buffer += data
        end = publisher.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(publisher.buffer[:end]).decode("latin-1")
        length = int(re.search(r"(?im)^content-length:\s*(\d+)", head).group(1))
        if len(publisher.buffer) < end + 4 + length:
            return
        status = int(head.split()[1])
        del publisher.buffer[:end + 4 + length]
        subscriber, publisher.user = publisher.user, None
        self.idle_publishers.append(publisher)
        if status not in (201, 202):
            self.fail(subscriber, f"publish {status}")
        else:
            self.subscribe(subscriber, now)
        self.publish_next()

    def on_subscriber(self, subscriber, mask, now):
        if subscriber.state == "connecting":
            code = subscriber.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self.fail(subscriber, f"connect {errno.errorcode.get(code, code)}")
                return
            subscriber.sock.send(subscriber.request)  # under 100 bytes into an empty buffer
            subscriber.state = "reading"
            self.selector.modify(subscriber.sock, selectors.EVENT_READ, subscriber)
            return
        try:
            data = subscriber.sock.recv(65536)
        except ConnectionError as error:
            data, reason = b"", type(error).__name__
        else:
            reason = "closed by the server"
        if not data:
            if subscriber.state == "done":
                self.done -= 1
            self.fail(subscriber, reason)
            return
        if subscriber.state == "done":
            return  # heartbeats
        subscriber.buffer += data
        if not subscriber.headers_done:
            end = subscriber.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(subscriber.buffer[:end]).decode("latin-1")
            status = int(head.split()[1])
            if status != 200:
                self.fail(subscriber, f"status {status}")
                return
            if re.search(r"(?im)^transfer-encoding:\s*chunked", head):
                self.fail(subscriber, "chunked (not handled)")
                return
            del subscriber.buffer[:end + 4]
            subscriber.headers_done = True
        while True:  # event blocks end with a blank line
            end = subscriber.buffer.find(b"\n\n")
            if end < 0:
                return
            block = bytes(subscriber.buffer[:end])
            del subscriber.buffer[:end + 2]
            if b"data:" in block and self.marker in block:
                subscriber.first = now
                subscriber.state = "done"
                subscriber.buffer = bytearray()
                self.done += 1
                return

    def run(self, deadline_s):
        """Arrivals at the rate until every user has their first snapshot (or failed)."""
        start = time.monotonic()
        arrived = 0
        while self.done + self.failed < self.users:
            now = time.monotonic()
            while arrived < self.users and start + arrived / self.rate <= now:
                self.late = max(self.late, now - (start + arrived / self.rate))
                self.arrive(arrived, now)
                arrived += 1
            if now - start > deadline_s:
                raise RuntimeError(f"{self.side}: {self.done} of {self.users} first snapshots after {deadline_s:.0f} s "
                                   f"(failed {self.failed}: {self.errors})")
            timeout = max(0.0, start + arrived / self.rate - now) if arrived < self.users else 1.0
            for key, mask in self.selector.select(timeout):
                now = time.monotonic()
                if isinstance(key.data, Publisher):
                    self.on_publisher(key.data, now)
                else:
                    self.on_subscriber(key.data, mask, now)
        return time.monotonic() - start

    def close(self):
        for subscriber in self.subscribers:
            if subscriber.state != "failed":
                self.selector.unregister(subscriber.sock)
                subscriber.sock.close()
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fileobj)
            key.fileobj.close()
        self.selector.close()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))] if ordered else float("nan")


# --- one side, one round ------------------------------------------------------------------------------

def malloc_trim(pids):
    """Asks each process's allocator to give back the free memory it keeps (glibc's malloc_trim(0),
    called through gdb): a diagnostic of how much of what was not given back is free but kept."""
    for pid in pids:
        subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int) malloc_trim(0)"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def one_wave(side, server, args, documents, base):
    """Users arrive until all have their first snapshot; the memory then; all leave; the server's count
    of what is live is awaited down to 0; the memory then. `base` is (rss, pss) before the wave."""
    load = Load(side, server.port, args.users, args.rate, documents, args.publishers,
                b"event: snapshot" if side == "diffstream" else b"data:")
    ticks0, tool0, wall0 = cpu_ticks(server.pids), tool_cpu_s(), time.monotonic()
    arrival_s = load.run(deadline_s=args.users / args.rate + 120)
    ticks1, tool1, wall1 = cpu_ticks(server.pids), tool_cpu_s(), time.monotonic()
    await_condition(f"{side} holds {args.users} users", lambda: server.ready_check(load.done), 30)
    rss, pss = memory_kib(server.pids)
    done = [s for s in load.subscribers if s.state == "done"]
    ttfs = [(s.first - s.subscribed) * 1000 for s in done]
    from_arrival = [(s.first - s.arrived) * 1000 for s in done]
    extra = {}
    if side == "diffstream":
        extra = {key: value for key, value in server.metrics().items()
                 if ("family" in key and "seconds" not in key) or key == "diffstream_store_bytes"}
    load.close()
    left_at = time.monotonic()
    wait_s = await_condition(f"{side} empty", server.empty_check, args.idle + server.message_timeout + 120)
    after_rss, after_pss = memory_kib(server.pids)
    held = max(len(done), 1)
    base_rss, base_pss = base
    fields = {
        "users": len(done), "failed": load.failed,
        "base_rss_mib": base_rss / 1024, "rss_mib": rss / 1024, "after_rss_mib": after_rss / 1024,
        "kib_per_user": (rss - base_rss) / held, "pss_kib_per_user": (pss - base_pss) / held,
        "back_mib": (rss - after_rss) / 1024, "back_pct": 100 * (rss - after_rss) / max(rss - base_rss, 1),
        "left_mib": (after_rss - base_rss) / 1024,
        "pss_back_mib": (pss - after_pss) / 1024, "pss_left_mib": (after_pss - base_pss) / 1024,
        "empty_after_s": time.monotonic() - left_at, "await_s": wait_s,
        "ttfs_p50_ms": percentile(ttfs, 50), "ttfs_p99_ms": percentile(ttfs, 99),
        "arrival_p50_ms": percentile(from_arrival, 50), "arrival_p99_ms": percentile(from_arrival, 99),
        "arrival_s": arrival_s, "late_ms": load.late * 1000,
        "server_cpu_us_per_user": (ticks1 - ticks0) / HZ * 1e6 / held,
        "tool_cpu_s": tool1 - tool0, "tool_cpu_pct": 100 * (tool1 - tool0) / (wall1 - wall0),
    }
    if load.errors:
        fields["errors"] = ";".join(f"{k.replace(' ', '_')}:{v}" for k, v in load.errors.items())
    for key, value in extra.items():
        fields[re.sub(r"\W", "_", key.replace('{family="home"}', "")).rstrip("_")] = value
    if "diffstream_store_bytes" in fields:
        fields["store_kib_per_user"] = fields["diffstream_store_bytes"] / 1024 / held
    return fields, (after_rss, after_pss)


def run_side(side, args, document, work):
    """A fresh server; --waves waves of users (the second and later on the memory the first left:
    growth then is what the server did not reuse); with --malloc-trim, the allocator's free memory given
    back at the end."""
    message_timeout = math.ceil(args.users / args.rate) + args.idle + 5
    server = DiffStream(args.binary, args.users, args.idle, work, args.diffstream_args.split()) if side == "diffstream" else Nchan(args.nginx_workers, message_timeout, work)
    server.message_timeout = message_timeout if side == "nchan" else 0
    try:
        documents = None
        if side == "nchan":
            def documents(index):
                name = Load.user_name(index)
                return document.replace(TEMPLATE_USER, name).replace(TEMPLATE_USER.capitalize(), name.capitalize()).encode()
        server.empty_check()  # one request answered before the baseline: the server is fully up
        start = memory_kib(server.pids)
        fields, after = one_wave(side, server, args, documents, start)
        for wave in range(2, args.waves + 1):
            again, after = one_wave(side, server, args, documents, after)
            fields[f"wave{wave}_kib_per_user"] = again["kib_per_user"]
            fields[f"wave{wave}_left_mib"] = (after[0] - start[0]) / 1024
        if args.malloc_trim:
            malloc_trim(server.pids)
            trimmed = memory_kib(server.pids)
            fields["trimmed_rss_mib"] = trimmed[0] / 1024
            fields["trimmed_left_mib"] = (trimmed[0] - start[0]) / 1024
        return fields
    finally:
        server.stop()


def size_document(binary, work):
    """The data of home.u00000's first snapshot event, as DiffStream streams it: what nchan's loader
    publishes (with each user's name put in)."""
    server = DiffStream(binary, 100, 60, work)
    try:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(f"GET /feeds/home.{TEMPLATE_USER}/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".encode())
        data = b""
        while b"event: snapshot" not in data or not re.search(rb"event: snapshot\n(?:[^\n]+\n)*\n", data):
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("diffstream closed the stream before the snapshot")
            data += chunk
        sock.close()
        block = re.search(rb"event: snapshot\n((?:[^\n]+\n)*)\n", data).group(1).decode()
        return next(line[len("data: "):] for line in block.splitlines() if line.startswith("data: "))
    finally:
        server.stop()


# --- the report ---------------------------------------------------------------------------------------

ROWS = [  # (field, label, format, ratio shown)
    ("kib_per_user", "memory per user, RSS (KiB)", "{:.2f}", True),
    ("pss_kib_per_user", "memory per user, Pss (KiB)", "{:.2f}", True),
    ("store_kib_per_user", "of which snapshots and replay (diffstream_store_bytes, KiB)", "{:.2f}", False),
    ("base_rss_mib", "RSS before the first user (MiB)", "{:.1f}", True),
    ("rss_mib", "RSS with all users (MiB)", "{:.1f}", True),
    ("after_rss_mib", "RSS after all left and the idle time (MiB)", "{:.1f}", True),
    ("back_mib", "given back, RSS (MiB)", "{:.1f}", False),
    ("back_pct", "given back, % of the growth", "{:.0f}", False),
    ("pss_back_mib", "given back, Pss (MiB)", "{:.1f}", False),
    ("left_mib", "left over after the idle time, RSS (MiB)", "{:.1f}", False),
    ("empty_after_s", "seconds from leaving to empty", "{:.1f}", False),
    ("wave2_kib_per_user", "second wave: RSS growth per user (KiB)", "{:.2f}", False),
    ("wave2_left_mib", "second wave: left over after it (MiB)", "{:.1f}", False),
    ("trimmed_left_mib", "left over after malloc_trim(0) (MiB)", "{:.1f}", False),
    ("ttfs_p50_ms", "first snapshot p50 from subscribe (ms)", "{:.2f}", True),
    ("ttfs_p99_ms", "first snapshot p99 from subscribe (ms)", "{:.2f}", True),
    ("arrival_p50_ms", "first snapshot p50 from arrival (ms)", "{:.2f}", True),
    ("arrival_p99_ms", "first snapshot p99 from arrival (ms)", "{:.2f}", True),
    ("server_cpu_us_per_user", "server CPU per user (µs)", "{:.0f}", True),
    ("arrival_s", "arrival phase (s)", "{:.1f}", False),
    ("tool_cpu_pct", "load tool CPU (% of one core)", "{:.0f}", False),
    ("tool_cpu_s", "load tool CPU (s)", "{:.1f}", False),
    ("late_ms", "last arrival behind schedule (ms)", "{:.1f}", False),
    ("failed", "failed users", "{:.0f}", False),
]


def summary(results, sides):
    medians = {side: {} for side in sides}
    for side in sides:
        runs = [fields for (s, _), fields in sorted(results.items()) if s == side]
        for field, _, _, _ in ROWS:
            values = [float(run[field]) for run in runs if field in run]
            if values:
                medians[side][field] = statistics.median(values)
    both = len(sides) == 2
    print("| figure (median of rounds) | " + " | ".join(sides) + (" | diffstream ÷ nchan |" if both else " |"))
    print("|---|" + "---:|" * (len(sides) + (1 if both else 0)))
    for field, label, form, ratio_shown in ROWS:
        if not any(field in medians[side] for side in sides):
            continue
        cells = [form.format(medians[side][field]) if field in medians[side] else "–" for side in sides]
        ratio = ""
        if both:
            a, b = medians["diffstream"].get(field), medians["nchan"].get(field)
            ratio = f" {a / b:.2f} |" if ratio_shown and a is not None and b is not None and a > 0 and b > 0 else " – |"
        print(f"| {label} | " + " | ".join(cells) + " |" + ratio)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.environ.get("DIFFSTREAM", ".build/release/diffstream"))
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
    parser.add_argument("--idle", type=int, default=5)
    parser.add_argument("--sides", default="diffstream,nchan")
    parser.add_argument("--publishers", type=int, default=8)
    parser.add_argument("--nginx-workers", default="auto")
    parser.add_argument("--diffstream-args", default="", help="more flags for diffstream, e.g. '--compression off'")
    parser.add_argument("--waves", type=int, default=1)
    parser.add_argument("--malloc-trim", action="store_true")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"no {args.binary}: swift build -c release --static-swift-stdlib --product diffstream (or --binary / DIFFSTREAM)")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = min(20000, hard) if hard != resource.RLIM_INFINITY else 20000
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # `ulimit -n 20000`: the servers inherit it
    if limit < args.users + 200:
        sys.exit(f"the open-file limit is {limit}: too few for {args.users} users")

    work = tempfile.mkdtemp(prefix="family-arrival-")
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    nchan_version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libnginx-mod-nchan"], capture_output=True, text=True).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}, repo {commit}, nchan {nchan_version or '?'}")
    document = size_document(args.binary, work)
    print(f"# users={args.users} rate={args.rate:g}/s rounds={args.rounds} idle={args.idle}s sides={','.join(sides)} "
          f"binary={args.binary} {args.diffstream_args}; home.{TEMPLATE_USER} snapshot data: {len(document)} bytes (nchan's document)", flush=True)

    results = {}
    try:
        for round_ in range(1, args.rounds + 1):
            order = sides if round_ % 2 == 1 else list(reversed(sides))
            for side in order:
                fields = run_side(side, args, document, work)
                results[(side, round_)] = fields
                text = " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items())
                print(f"RESULT side={side} round={round_} load={open('/proc/loadavg').read().split()[0]} {text}", flush=True)
    finally:
        if args.keep_logs:
            print(f"# logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    summary(results, sides)


if __name__ == "__main__":
    main()
