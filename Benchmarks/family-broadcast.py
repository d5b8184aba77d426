#!/usr/bin/env python3
"""One catalogue change to 10,000 live users, against nginx + nchan's 10,000 per-user publishes (issue 52, item 4).

Builds on Benchmarks/family-arrival.py (its servers, its arrival load): --users users arrive at --rate per
second, each with their own stream open, until every one has their first event. Then, per side:

  diffstream  the server runs with `--demo`: the family `home` follows a new catalogue edition every 20 s
              (HomeFamily.apply(edition:to:user:)), applied to every live member, each of which renders,
              diffs and sends its own `event: batch`. The script waits for the first edition after
              everyone is connected (it is not told when it happens) and records each user's batch
              arrival. Each batch is checked: an `event: batch` (not a snapshot) on that user's stream,
              whose media ids are that user's picks of the catalogue (the same FNV-1a + splitmix64 choice
              as HomeFamily.choose, ported below), before or after the edition.
  nchan       nginx + nchan, one channel per user (Benchmarks/nchan/nginx-family.conf.template), arrivals
              as in family-arrival.py (publish the user's document, then subscribe). Then "the program"
              POSTs one message per user to /pub/<user>, --publishers keep-alive connections, one POST at
              a time on each, as fast as it can: 10,000 publishes, from a forked process of its own. The message is the data of a real
              DiffStream batch of the same change (home.u00000's, taken at the start), the same bytes.

Arrival times are the kernel's receive timestamps of the socket read that completed the event
(SO_TIMESTAMPNS, CLOCK_REALTIME), so the script's own time reading 10,000 sockets is not counted; the
time the script read them is reported too (`read_*`).

Reported per side and round:
  spread p50/p99/max  diffstream: each user's batch arrival − the first user's batch arrival. This omits
                      the time from the element (the edition) to the first delivery, which is estimated
                      separately: the editions tick every 20 s from the server's start, so the element
                      was sent in [spawn + 20 k, announce + 20 k] (+ the timer's lateness), and
                      `first_after_element_*` bounds first arrival − that.
                      nchan: each delivery − the first POST's send (so it includes the first delivery).
  server CPU          utime + stime (/proc/PID/stat, all the server's processes) sampled every ~10 ms in the
                      script's loop: from the last sample before the first arrival (nchan: before the first
                      POST) to the first sample after the last arrival; in ms of CPU (ticks are 10 ms).
                      diffstream also `server_cpu_from_element`: from the last sample before the earliest
                      the element can have been sent (spawn + 20 k), so it counts the work before the first
                      arrival too.
  busiest thread      diffstream: the CPU of its busiest thread over the same time (/proc/PID/task), and
                      how many threads took 10% of the total or more: whether the work spread over the cores.
  publisher           nchan: wall time from the first POST to the last answer, and the script's own CPU
                      over it (it is the program publishing).

    python3 Benchmarks/family-broadcast.py --rounds 3                 # 10,000 users, both sides alternating
    python3 Benchmarks/family-broadcast.py --users 1000 --rounds 1    # a smoke run

Flags: --binary (DIFFSTREAM), --users (10000), --rate (1000 per second: arrivals end well inside the first
20 s edition period), --rounds (2), --sides (diffstream,nchan), --publishers (8), --nginx-workers (auto),
--diffstream-args, --keep-logs. Raises its open-file limit to 20,000 (the servers inherit it).
"""
import argparse
import importlib.util
import os
import re
import resource
import selectors
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("family_arrival", os.path.join(HERE, "family-arrival.py"))
fa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fa)

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux: SCM_TIMESTAMPNS == SO_TIMESTAMPNS
EDITION_PERIOD = 20.0
MASK = (1 << 64) - 1


# --- HomeFamily's picks, ported (Sources/DiffStreamExamples/HomeFamily.swift) -----------------------------

CATALOGUE = [f"c{i}" for i in range(1, 17)]


def picks(user, edition, n=4):
    if edition > 0:
        shift = edition % 16
        catalogue = [f"new-{edition}"] + CATALOGUE[shift:] + CATALOGUE[:shift]
    else:
        catalogue = list(CATALOGUE)
    state = 0xCBF29CE484222325
    for byte in user.encode():
        state = ((state ^ byte) * 0x100000001B3) & MASK
    pool, chosen = catalogue, []
    pool = list(pool)
    for _ in range(min(2 * n, len(pool))):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        chosen.append(pool.pop(z % len(pool)))
    return set(chosen)


def media_ids(data):
    return set(re.findall(r'"id"\s*:\s*"((?:c\d+|new-\d+))"', data))


# --- the servers' CPU, sampled -----------------------------------------------------------------------------

class Sampler:
    def __init__(self, pids, every=0.010):
        self.pids, self.every = pids, every
        self.samples = []  # (time.time(), ticks)
        self.sample()

    def sample(self):
        self.samples.append((time.time(), fa.cpu_ticks(self.pids)))

    def maybe(self):
        if time.time() - self.samples[-1][0] >= self.every:
            self.sample()

    def between(self, start, end):
        """CPU seconds from the last sample at or before `start` to the first at or after `end`, and that window."""
        before = [s for s in self.samples if s[0] <= start]
        after = [s for s in self.samples if s[0] >= end]
        a = before[-1] if before else self.samples[0]
        b = after[0] if after else self.samples[-1]
        return (b[1] - a[1]) / fa.HZ, b[0] - a[0]


def thread_ticks(pid):
    """utime + stime per thread of the process: {tid: ticks}."""
    ticks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            ticks[tid] = fa.cpu_ticks([f"{pid}/task/{tid}"])
        except OSError:
            pass
    return ticks


def thread_fields(before, after):
    """How the server's CPU between two thread_ticks() spread over its threads."""
    deltas = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
    total = sum(deltas) or 1
    return {"busiest_thread_cpu_ms": deltas[0] * 1000 / fa.HZ if deltas else 0.0,
            "threads_over_10pct": sum(1 for d in deltas if d >= 0.1 * total)}


def recv_stamped(sock):
    """(data, kernel receive time or None)."""
    data, ancdata, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(16))
    stamp = None
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
            seconds, nanos = struct.unpack("qq", payload[:16])
            stamp = seconds + nanos / 1e9
    return data, stamp


# --- the change ---------------------------------------------------------------------------------------------

class Broadcast:
    """After the arrivals: every user's next event on their stream, with its arrival time."""

    def __init__(self, side, load, sampler):
        self.side, self.load, self.sampler = side, load, sampler
        n = len(load.subscribers)
        self.arrival = [None] * n   # kernel timestamp (time.time() clock)
        self.read = [None] * n      # when the script read it
        self.data = [None] * n
        self.stamped = [False] * n
        self.buffers = [bytearray() for _ in range(n)]
        self.problems = {}
        self.armed = False
        self.ignored = 0
        for subscriber in load.subscribers:
            if subscriber.state == "done":
                subscriber.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)

    def problem(self, reason):
        self.problems[reason] = self.problems.get(reason, 0) + 1

    def on_subscriber(self, subscriber):
        try:
            data, stamp = recv_stamped(subscriber.sock)
        except ConnectionError as error:
            data, stamp = b"", None
        now = time.time()
        i = subscriber.user
        if not data:
            self.problem("closed")
            self.load.selector.unregister(subscriber.sock)
            subscriber.state = "failed"
            return
        if not self.armed:
            self.ignored += 1
            return
        if self.arrival[i] is not None:
            return
        buffer = self.buffers[i]
        buffer += data
        while True:
            end = buffer.find(b"\n\n")
            if end < 0:
                return
            block = bytes(buffer[:end]).decode("utf-8", "replace")
            del buffer[:end + 2]
            lines = block.split("\n")
            event = next((l[6:].strip() for l in lines if l.startswith("event:")), None)
            payload = "\n".join(l[5:].lstrip() for l in lines if l.startswith("data:"))
            if not payload:
                continue  # a heartbeat or a fragment
            if self.side == "diffstream" and event != "batch":
                self.problem(f"event {event}")
            self.arrival[i], self.read[i], self.data[i], self.stamped[i] = stamp or now, now, payload, stamp is not None
            return

    def delivered(self):
        return sum(1 for a in self.arrival if a is not None)

    def pump(self, until, on_publisher=None, stop=None):
        """Runs the loop until `until` (time.time()) or `stop()`."""
        while time.time() < until and not (stop and stop()):
            for key, _ in self.load.selector.select(0.005):
                if isinstance(key.data, fa.Publisher):
                    on_publisher(key.data)
                else:
                    self.on_subscriber(key.data)
                self.sampler.maybe()
            self.sampler.maybe()


def percentiles(values, prefix):
    return {f"{prefix}_p50_ms": fa.percentile(values, 50), f"{prefix}_p99_ms": fa.percentile(values, 99),
            f"{prefix}_max_ms": max(values) if values else float("nan")}


def delivery_fields(load, broadcast, got, wrong, spread, read_spread, cpu_s, window_s):
    """The fields both sides report: deliveries, their times, the server's CPU."""
    return {"users": load.done, "delivered": len(got), "wrong_user": wrong,
            **percentiles(spread, "spread"), **percentiles(read_spread, "read_spread"),
            "stamped": sum(1 for i in got if broadcast.stamped[i]),
            "server_cpu_ms": cpu_s * 1000, "cpu_window_ms": window_s * 1000}


def problem_fields(broadcast):
    return {"problems": ";".join(f"{k.replace(' ', '_')}:{v}" for k, v in broadcast.problems.items())} if broadcast.problems else {}


def diffstream_round(args, work):
    spawned = time.time()
    server = fa.DiffStream(args.binary, args.users, 60, work, ["--demo", *args.diffstream_args.split()])
    announced = time.time()
    try:
        load = fa.Load("diffstream", server.port, args.users, args.rate, None, 0, b"event: snapshot")
        load.run(deadline_s=args.users / args.rate + 120)
        connected = time.time()
        if load.failed:
            raise RuntimeError(f"diffstream: {load.failed} users failed: {load.errors}")
        sampler = Sampler(server.pids)
        threads_before = thread_ticks(server.process.pid)
        broadcast = Broadcast("diffstream", load, sampler)
        # The next edition after everyone is connected (at least 1 s away: an edition during the arrivals
        # is let through first, its batches ignored).
        k = int((connected + 1.0 - announced) // EDITION_PERIOD) + 1
        element_early, element_late = spawned + k * EDITION_PERIOD, announced + k * EDITION_PERIOD
        broadcast.pump(element_early - 0.5)
        broadcast.armed = True
        broadcast.pump(element_late + 30, stop=lambda: broadcast.delivered() >= load.done)
        broadcast.pump(time.time() + 0.05)  # one more sample past the last arrival
        threads = thread_fields(threads_before, thread_ticks(server.process.pid))
        got = [i for i, a in enumerate(broadcast.arrival) if a is not None]
        first, last = min(broadcast.arrival[i] for i in got), max(broadcast.arrival[i] for i in got)
        spread = [(broadcast.arrival[i] - first) * 1000 for i in got]
        read_spread = [(broadcast.read[i] - min(broadcast.read[j] for j in got)) * 1000 for i in got]
        cpu_s, window_s = sampler.between(first, last)
        cpu_all_s, window_all_s = sampler.between(element_early, last)
        # The right user: the batch's media are that user's picks of the edition (or the one before).
        editions = {}
        wrong = 0
        for i in got:
            user = fa.Load.user_name(i)
            ids = media_ids(broadcast.data[i])
            match = next((e for e in range(k, k + 3) if ids and ids <= picks(user, e) | picks(user, e - 1)), None)
            if match is None or f'"feed":"home.{user}"' not in broadcast.data[i]:
                wrong += 1
            else:
                editions[match] = editions.get(match, 0) + 1
        sizes = [len(broadcast.data[i]) for i in got]
        fields = {**delivery_fields(load, broadcast, got, wrong, spread, read_spread, cpu_s, window_s),
                  "editions": "/".join(f"{e}:{n}" for e, n in sorted(editions.items())), **threads,
                  "server_cpu_from_element_ms": cpu_all_s * 1000, "cpu_from_element_window_ms": window_all_s * 1000,
                  "first_after_element_min_ms": (first - element_late) * 1000,
                  "first_after_element_max_ms": (first - element_early) * 1000,
                  "last_after_element_max_ms": (last - element_early) * 1000,
                  "batch_bytes_p50": statistics.median(sizes), "ignored_reads": broadcast.ignored,
                  "start_s": announced - spawned, **problem_fields(broadcast)}
        load.close()
        return fields
    finally:
        server.stop()


def publish_all(port, bodies, connections):
    """The program: one POST per user to /pub/<user>, over `connections` keep-alive connections, one POST
    at a time on each, as fast as it can. (first POST sent, last answer, statuses not 201/202, CPU s.)"""
    selector = selectors.DefaultSelector()
    socks = []
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(sock)
    queue = list(range(len(bodies)))
    queue.reverse()
    buffers = {sock: bytearray() for sock in socks}
    bad = answered = 0

    def post(sock):
        if queue:
            i = queue.pop()
            body = bodies[i]
            sock.sendall((f"POST /pub/{fa.Load.user_name(i)} HTTP/1.1\r\nHost: bench\r\n"
                          f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)

    cpu0 = fa.tool_cpu_s()
    first = time.time()
    for sock in socks:
        selector.register(sock, selectors.EVENT_READ)
        post(sock)
    while answered < len(bodies):
        for key, _ in selector.select(10):
            sock = key.fileobj
            data = sock.recv(65536)
            if not data:
                raise RuntimeError("nchan closed a publisher connection")
            buffer = buffers[sock]
            buffer += data
            while True:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = bytes(buffer[:end]).decode("latin-1")
                length = int(re.search(r"(?im)^content-length:\s*(\d+)", head).group(1))
                if len(buffer) < end + 4 + length:
                    break
                if int(head.split()[1]) not in (201, 202):
                    bad += 1
                del buffer[:end + 4 + length]
                answered += 1
                post(sock)
    last = time.time()
    return first, last, bad, fa.tool_cpu_s() - cpu0


def nchan_round(args, work, document, message):
    server = fa.Nchan(args.nginx_workers, 600, work)
    try:
        def documents(index):
            name = fa.Load.user_name(index)
            return document.replace(fa.TEMPLATE_USER, name).replace(fa.TEMPLATE_USER.capitalize(), name.capitalize()).encode()
        load = fa.Load("nchan", server.port, args.users, args.rate, documents, args.publishers, b"data:")
        load.run(deadline_s=args.users / args.rate + 120)
        if load.failed:
            raise RuntimeError(f"nchan: {load.failed} users failed: {load.errors}")
        sampler = Sampler(server.pids)
        broadcast = Broadcast("nchan", load, sampler)
        broadcast.pump(time.time() + 0.5)  # quiet: leftovers of the arrivals
        broadcast.armed = True
        bodies = [message.replace(fa.TEMPLATE_USER, fa.Load.user_name(i)).encode() for i in range(args.users)]
        # The publisher is a process of its own (forked), so that this loop's reading of 10,000 streams
        # does not hold its POSTs back; it reports its times and CPU through a pipe.
        go_r, go_w = os.pipe()
        out_r, out_w = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                os.close(go_w)
                os.close(out_r)
                os.read(go_r, 1)
                first, last, bad, cpu = publish_all(server.port, bodies, args.publishers)
                os.write(out_w, f"{first!r} {last!r} {bad} {cpu!r}".encode())
            finally:
                os._exit(0)
        os.close(go_r)
        os.close(out_w)
        sampler.sample()
        os.write(go_w, b"g")
        broadcast.pump(time.time() + 60, stop=lambda: broadcast.delivered() >= load.done)
        broadcast.pump(time.time() + 0.05)
        reply = os.read(out_r, 1000).decode().split()
        os.waitpid(child, 0)
        os.close(go_w)
        os.close(out_r)
        first_post, last_answer, bad, publisher_cpu = float(reply[0]), float(reply[1]), int(reply[2]), float(reply[3])
        if bad:
            broadcast.problem(f"publish_not_201:{bad}")
        got = [i for i, a in enumerate(broadcast.arrival) if a is not None]
        spread = [(broadcast.arrival[i] - first_post) * 1000 for i in got]
        read_spread = [(broadcast.read[i] - first_post) * 1000 for i in got]
        last = max(broadcast.arrival[i] for i in got)
        cpu_s, window_s = sampler.between(first_post, last)
        wrong = sum(1 for i in got if broadcast.data[i].encode() != bodies[i])
        fields = {**delivery_fields(load, broadcast, got, wrong, spread, read_spread, cpu_s, window_s),
                  "publish_wall_ms": (last_answer - first_post) * 1000,
                  "publisher_cpu_ms": publisher_cpu * 1000, "message_bytes": len(bodies[0]), **problem_fields(broadcast)}
        load.close()
        return fields
    finally:
        server.stop()


def batch_message(binary, work):
    """The data of home.u00000's batch for the first edition: what nchan's program publishes per user."""
    server = fa.DiffStream(binary, 100, 60, work, ["--demo"])
    try:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=EDITION_PERIOD + 15)
        sock.sendall(f"GET /feeds/home.{fa.TEMPLATE_USER}/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".encode())
        data = b""
        while not re.search(rb"event: batch\n(?:[^\n]+\n)*\n", data):
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("diffstream closed the stream before a batch")
            data += chunk
        sock.close()
        block = re.search(rb"event: batch\n((?:[^\n]+\n)*)\n", data).group(1).decode()
        return next(line[len("data: "):] for line in block.splitlines() if line.startswith("data: "))
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.environ.get("DIFFSTREAM", ".build/release/diffstream"))
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sides", default="diffstream,nchan")
    parser.add_argument("--publishers", type=int, default=8)
    parser.add_argument("--nginx-workers", default="auto")
    parser.add_argument("--diffstream-args", default="")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"no {args.binary}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = min(20000, hard) if hard != resource.RLIM_INFINITY else 20000
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    if limit < args.users + 200:
        sys.exit(f"the open-file limit is {limit}: too few for {args.users} users")
    work = tempfile.mkdtemp(prefix="family-broadcast-")
    commit = subprocess.run(["git", "-C", fa.ROOT, "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    nchan_version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libnginx-mod-nchan"], capture_output=True, text=True).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}, repo {commit}, nchan {nchan_version or '?'}", flush=True)
    results = {}
    try:
        document = fa.size_document(args.binary, work)
        message = batch_message(args.binary, work) if "nchan" in sides else ""
        print(f"# users={args.users} rate={args.rate:g}/s rounds={args.rounds} binary={args.binary}; "
              f"snapshot data {len(document)} bytes, batch data {len(message)} bytes (nchan's message)", flush=True)
        for round_ in range(1, args.rounds + 1):
            order = sides if round_ % 2 == 1 else list(reversed(sides))
            for side in order:
                load_avg = open('/proc/loadavg').read().split()[0]
                fields = diffstream_round(args, work) if side == "diffstream" else nchan_round(args, work, document, message)
                results[(side, round_)] = fields
                text = " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items())
                print(f"RESULT side={side} round={round_} load={load_avg} {text}", flush=True)
    finally:
        if args.keep_logs:
            print(f"# logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    keys = ["spread_p50_ms", "spread_p99_ms", "spread_max_ms", "read_spread_p99_ms", "server_cpu_ms",
            "cpu_window_ms", "server_cpu_from_element_ms", "cpu_from_element_window_ms", "busiest_thread_cpu_ms",
            "last_after_element_max_ms", "first_after_element_min_ms", "first_after_element_max_ms",
            "publish_wall_ms", "publisher_cpu_ms", "delivered", "wrong_user"]
    print("| figure (median of rounds) | " + " | ".join(sides) + " |")
    print("|---|" + "---:|" * len(sides))
    for key in keys:
        cells = []
        for side in sides:
            values = [float(f[key]) for (s, _), f in results.items() if s == side and key in f]
            cells.append(f"{statistics.median(values):.1f}" if values else "–")
        if any(c != "–" for c in cells):
            print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
