#!/usr/bin/env python3
"""Presence under churn (issue 55): 10,000 subscribers join one feed at 1,000/s and then leave, with
presence on against the same run without it.

Per arm and round (each arm a fresh release server, `--data none --presence F` or without `--presence`;
which arm goes first alternates by round):

  join      --users streams of `GET /feeds/F/events` open at --rate per second (one connection each,
            from 127.0.0.1; the server runs with `--max-connections-per-ip 0`); a stream has joined when
            its first event, `event: snapshot`, has arrived (the server makes it present right after).
  leave     once all have joined, they close in the same order at --rate per second.
  end       the presence arm follows until the presence feed shows count 0 (after --presence-grace);
            both arms end the window at the last close + grace + interval + 0.5 s at the earliest, so
            the two windows have the same length when presence is on time.

  watcher   (presence arm) one stream of `/feeds/_presence.F/events`, read in the load's own selector
            loop, records every batch: its arrival, the bytes of its `data:` line (and of the whole
            event), and the section model's count (`updateSection` of `present`; a batch without one
            keeps the count before it).
  join → batch   the joins sorted by the arrival of their snapshot; the i-th is shown by the first batch
            whose count is at least i (the first 100 users are listed, past them only the count moves;
            the count only grows until the first grace ends). p50, p99 and max of batch arrival − the
            join's snapshot arrival. Goal: p99 ≤ --presence-interval + 100 ms.
  leave → batch  the i-th close is shown by the first batch (after the joins) whose count is at most
            users − i; the time from the close + grace to it (how late after the grace it is shown).
  server CPU     utime + stime of the server (/proc/PID/stat) over the window from the first join to
            its end; the ratio presence ÷ none of the medians. Goal: ≤ 1.20.
  load tool      this script's own CPU over the window, in % of the wall time (one core is the most it
            can use): well under 100 % means it does not set the pace; `late` is how far behind
            schedule the last open (or close) was.

Prints a RESULT line per arm and round, then a markdown table of the medians over rounds.

    python3 Benchmarks/presence-churn.py                                   # 10,000 users at 1,000/s, 3 rounds
    python3 Benchmarks/presence-churn.py --users 2000 --rounds 1           # a smoke run
    python3 Benchmarks/presence-churn.py --names                           # --presence-names and a token per user

Flags: --binary (DIFFSTREAM; default .build/release/diffstream), --users (10000), --rate (1000 per
second, for joins and leaves), --rounds (ROUNDS; 3), --arms (presence,none), --feed (board),
--interval and --grace (the server's --presence-interval and --presence-grace: 1 and 5), --names
(the feed is under `--presence-names` and every stream carries a signed token with its own `sub` and
`name`: the server verifies it for presence; the arm without presence sends the same tokens; both
run with `--jwt-secret-file` and an admin `--token` for the feed's PUT),
--diffstream-args (more server flags), --keep-logs. The server is started as in family-arrival.py (its
`DiffStream` class, whose `--examples home` family is registered and unused here); the load is its
`Load` selector loop with another path. The open-file limit is raised to 20,000. Standard library only.
"""
import argparse
import base64
import hashlib
import hmac
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
_spec = importlib.util.spec_from_file_location("family_arrival", os.path.join(HERE, "family-arrival.py"))
fa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fa)

JWT_SECRET = "presence-churn-secret-of-at-least-thirty-two-bytes"
ADMIN_TOKEN = "presence-churn-admin"  # with a JWT secret, writes need a credential: the feed's PUT


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(sub, name):
    """An HS256 token that may subscribe to everything, with `sub` and `name`."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"exp": int(time.time()) + 3600, "sub": sub, "name": name,
                                 "diffstream": {"subscribe": ["*"], "publish": []}}).encode())
    signature = hmac.new(JWT_SECRET.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


class Watcher:
    """A stream of the presence feed, read by the load's selector loop: every batch with its arrival,
    its size and the count it makes."""

    def __init__(self, port, feed):
        import socket
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(f"GET /feeds/_presence.{feed}/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.buffer = bytearray()
        self.headers_done = False
        self.count = None  # from the snapshot on
        self.batches = []  # (arrival, data bytes, event bytes, count after it)
        while self.count is None:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError(f"the presence feed's stream closed: {bytes(self.buffer[:300])!r}")
            self.take(chunk, time.monotonic())
        self.sock.setblocking(False)

    def take(self, data, now):
        self.buffer += data
        if not self.headers_done:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).decode("latin-1")
            if int(head.split()[1]) != 200 or "chunked" in head.lower():
                raise RuntimeError(f"presence feed: {head.splitlines()[0]}")
            del self.buffer[:end + 4]
            self.headers_done = True
        while True:
            end = self.buffer.find(b"\n\n")
            if end < 0:
                return
            block = bytes(self.buffer[:end])
            del self.buffer[:end + 2]
            lines = block.split(b"\n")
            kind = next((line[7:] for line in lines if line.startswith(b"event: ")), None)
            data = next((line[6:] for line in lines if line.startswith(b"data: ")), None)
            if data is None:
                continue
            document = json.loads(data)
            if kind == b"snapshot":
                self.count = document["sections"][0]["model"]["count"]
            elif kind == b"batch":
                for op in document["ops"]:
                    if op["op"] == "updateSection" and op["section"] == "present":
                        self.count = op["model"]["count"]
                self.batches.append((now, len(data), len(block) + 2, self.count))

    def on_read(self, now):
        data = self.sock.recv(1 << 20)
        if not data:
            raise RuntimeError("the server closed the presence feed's stream")
        self.take(data, now)


class Churn(fa.Load):
    """family-arrival's load on one feed: the streams open at the rate (`run`), then close at the rate
    (`leave`); a watcher's socket is read in the same loop."""

    def __init__(self, port, users, rate, feed, names):
        super().__init__("diffstream", port, users, rate, None, 0, b"event: snapshot")
        self.feed, self.names = feed, names
        self.watcher = None
        self.closed_at = []
        self.leave_late = 0.0

    def watch(self, watcher):
        self.watcher = watcher
        self.selector.register(watcher.sock, 1, watcher)  # EVENT_READ

    def arrive(self, index, now):
        auth = f"Authorization: Bearer {token(f'user{index}@example.com', f'User {index}')}\r\n" if self.names else ""
        request = f"GET /feeds/{self.feed}/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n{auth}\r\n".encode()
        subscriber = fa.Subscriber(index, request, now)
        self.subscribers.append(subscriber)
        self.subscribe(subscriber, now)

    def on_subscriber(self, subscriber, mask, now):
        if subscriber is self.watcher:
            self.watcher.on_read(now)
        else:
            super().on_subscriber(subscriber, mask, now)

    def pump(self, timeout):
        for key, mask in self.selector.select(timeout):
            self.on_subscriber(key.data, mask, time.monotonic())

    def leave(self):
        """Closes the streams that joined, in the order they joined, at the rate."""
        joined = sorted((s for s in self.subscribers if s.state == "done"), key=lambda s: s.first)
        start = time.monotonic()
        index = 0
        while index < len(joined):
            now = time.monotonic()
            while index < len(joined) and start + index / self.rate <= now:
                self.leave_late = max(self.leave_late, now - (start + index / self.rate))
                subscriber = joined[index]
                self.selector.unregister(subscriber.sock)
                subscriber.sock.close()
                subscriber.state = "left"
                self.closed_at.append(now)
                index += 1
            self.pump(max(0.0, start + index / self.rate - time.monotonic()) if index < len(joined) else 0)

    def follow(self, until, check, timeout):
        """Reads the watcher until `until` (monotonic) has passed and `check()` holds."""
        limit = time.monotonic() + timeout
        while time.monotonic() < until or not check():
            if time.monotonic() > limit:
                raise RuntimeError(f"not reached in {timeout:.0f} s (count {self.watcher.count if self.watcher else '–'})")
            self.pump(max(0.01, min(0.2, until - time.monotonic())))

    def close(self):
        for subscriber in self.subscribers:
            if subscriber.state not in ("failed", "left"):
                self.selector.unregister(subscriber.sock)
                subscriber.sock.close()
        if self.watcher:
            self.selector.unregister(self.watcher.sock)
            self.watcher.sock.close()
        self.selector.close()


def create_feed(port, feed, names):
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"sections": [{"id": "s", "model": {"title": "s"}, "items": []}]})
    connection.request("PUT", f"/feeds/{feed}", body=body, headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {ADMIN_TOKEN}"} if names else {})})
    reply = connection.getresponse()
    reply.read()
    connection.close()
    if reply.status not in (200, 201):
        raise RuntimeError(f"PUT /feeds/{feed}: {reply.status}")


def one_run(arm, args, work):
    extra = ["--presence-interval", str(args.interval), "--presence-grace", str(args.grace), *args.diffstream_args.split()]
    if args.names:
        secret = os.path.join(work, "jwt-secret")
        with open(secret, "w") as out:
            out.write(JWT_SECRET + "\n")
        extra += ["--jwt-secret-file", secret, "--token", ADMIN_TOKEN]
    if arm == "presence":
        extra += ["--presence-names" if args.names else "--presence", args.feed]
    server = fa.DiffStream(args.binary, args.users, 5, work, extra)
    try:
        create_feed(server.port, args.feed, args.names)
        load = Churn(server.port, args.users, args.rate, args.feed, args.names)
        if arm == "presence":
            load.watch(Watcher(server.port, args.feed))
        ticks0, tool0, wall0 = fa.cpu_ticks(server.pids), fa.tool_cpu_s(), time.monotonic()
        join_s = load.run(deadline_s=args.users / args.rate + 120)
        joined_at, ticks_joined = time.monotonic(), fa.cpu_ticks(server.pids)
        load.leave()
        left_at, ticks_left = time.monotonic(), fa.cpu_ticks(server.pids)
        earliest_end = load.closed_at[-1] + args.grace + args.interval + 0.5
        if arm == "presence":
            load.follow(earliest_end, lambda: load.watcher.count == 0, args.grace + 60)
        else:
            load.follow(earliest_end, lambda: True, 60)
        ticks1, tool1, wall1 = fa.cpu_ticks(server.pids), fa.tool_cpu_s(), time.monotonic()
        users = load.done
        fields = {
            "users": users, "failed": load.failed,
            "join_s": join_s, "leave_s": left_at - joined_at, "window_s": wall1 - wall0,
            "server_cpu_s": (ticks1 - ticks0) / fa.HZ,
            "server_cpu_us_per_user": (ticks1 - ticks0) / fa.HZ * 1e6 / max(users, 1),
            "server_cpu_join_s": (ticks_joined - ticks0) / fa.HZ, "server_cpu_leave_s": (ticks_left - ticks_joined) / fa.HZ,
            "server_cpu_after_s": (ticks1 - ticks_left) / fa.HZ,
            "tool_cpu_s": tool1 - tool0, "tool_cpu_pct": 100 * (tool1 - tool0) / (wall1 - wall0),
            "join_late_ms": load.late * 1000, "leave_late_ms": load.leave_late * 1000,
        }
        if load.errors:
            fields["errors"] = ";".join(f"{k.replace(' ', '_')}:{v}" for k, v in load.errors.items())
        if arm == "presence":
            fields.update(presence_figures(load, args))
        load.close()
        return fields
    finally:
        server.stop()


def presence_figures(load, args):
    batches = load.watcher.batches
    joins = sorted(s.first for s in load.subscribers if s.first is not None)
    # The joins' batches: the count only grows until the first grace ends.
    first_drop = next((i for i in range(1, len(batches)) if batches[i][3] < batches[i - 1][3]), len(batches))
    join_batches, leave_batches = batches[:first_drop], batches[first_drop:]
    join_ms, unshown = [], 0
    b = 0
    for i, at in enumerate(joins, start=1):
        while b < len(join_batches) and join_batches[b][3] < i:
            b += 1
        if b == len(join_batches):
            unshown += 1
            continue
        join_ms.append((join_batches[b][0] - at) * 1000)
    leave_ms = []
    b = 0
    total = len(joins)
    for i, at in enumerate(load.closed_at, start=1):
        while b < len(leave_batches) and leave_batches[b][3] > total - i:
            b += 1
        if b < len(leave_batches):
            leave_ms.append((leave_batches[b][0] - at - args.grace) * 1000)
    sizes = [data for _, data, _, _ in batches]
    events = [event for _, _, event, _ in batches]
    return {
        "batches": len(batches), "join_batches": len(join_batches), "leave_batches": len(leave_batches),
        "batch_bytes_median": statistics.median(sizes) if sizes else 0, "batch_bytes_max": max(sizes, default=0),
        "event_bytes_max": max(events, default=0), "batches_over_16k": sum(1 for size in sizes if size > 16384),
        "batch_bytes_total": sum(sizes),
        "join_p50_ms": fa.percentile(join_ms, 50), "join_p99_ms": fa.percentile(join_ms, 99), "join_max_ms": max(join_ms, default=float("nan")),
        "joins_unshown": unshown,
        "leave_p50_ms": fa.percentile(leave_ms, 50), "leave_p99_ms": fa.percentile(leave_ms, 99), "leave_max_ms": max(leave_ms, default=float("nan")),
        "final_count": load.watcher.count,
    }


ROWS = [  # (field, label, format)
    ("server_cpu_s", "server CPU over the window (s)", "{:.2f}"),
    ("server_cpu_us_per_user", "server CPU per user, join + leave (µs)", "{:.0f}"),
    ("server_cpu_join_s", "… while joining (s)", "{:.2f}"),
    ("server_cpu_leave_s", "… while leaving (s)", "{:.2f}"),
    ("server_cpu_after_s", "… after the last close (s)", "{:.2f}"),
    ("window_s", "window: first join to end (s)", "{:.1f}"),
    ("join_s", "join phase (s)", "{:.1f}"),
    ("leave_s", "leave phase (s)", "{:.1f}"),
    ("batches", "presence batches", "{:.0f}"),
    ("join_batches", "… of the joins", "{:.0f}"),
    ("leave_batches", "… of the leaves", "{:.0f}"),
    ("batch_bytes_median", "batch `data:` bytes, median", "{:.0f}"),
    ("batch_bytes_max", "batch `data:` bytes, max", "{:.0f}"),
    ("event_bytes_max", "batch event bytes (with `event:`, `id:`), max", "{:.0f}"),
    ("batches_over_16k", "batches over 16 KiB", "{:.0f}"),
    ("batch_bytes_total", "presence bytes per watcher, total", "{:.0f}"),
    ("join_p50_ms", "join → batch p50 (ms)", "{:.0f}"),
    ("join_p99_ms", "join → batch p99 (ms)", "{:.0f}"),
    ("join_max_ms", "join → batch max (ms)", "{:.0f}"),
    ("leave_p50_ms", "close + grace → batch p50 (ms)", "{:.0f}"),
    ("leave_p99_ms", "close + grace → batch p99 (ms)", "{:.0f}"),
    ("tool_cpu_pct", "load tool CPU (% of one core)", "{:.0f}"),
    ("join_late_ms", "last open behind schedule (ms)", "{:.1f}"),
    ("leave_late_ms", "last close behind schedule (ms)", "{:.1f}"),
    ("failed", "failed streams", "{:.0f}"),
]


def summary(results, arms, args):
    medians = {arm: {} for arm in arms}
    for arm in arms:
        runs = [fields for (a, _), fields in sorted(results.items()) if a == arm]
        for field, _, _ in ROWS:
            values = [float(run[field]) for run in runs if field in run]
            if values:
                medians[arm][field] = statistics.median(values)
    print("| figure (median of rounds) | " + " | ".join(arms) + " |")
    print("|---|" + "---:|" * len(arms))
    for field, label, form in ROWS:
        if any(field in medians[arm] for arm in arms):
            print(f"| {label} | " + " | ".join(form.format(medians[arm][field]) if field in medians[arm] else "–" for arm in arms) + " |")
    if {"presence", "none"} <= set(arms):
        ratio = medians["presence"]["server_cpu_s"] / medians["none"]["server_cpu_s"]
        ratios = [results[("presence", r)]["server_cpu_s"] / results[("none", r)]["server_cpu_s"]
                  for r in range(1, args.rounds + 1) if ("presence", r) in results and ("none", r) in results]
        print(f"\nserver CPU presence ÷ none: {ratio:.3f} (medians); per round {', '.join(f'{x:.3f}' for x in ratios)} "
              f"— goal ≤ 1.20 {'met' if ratio <= 1.2 else 'NOT met'}")
    if "presence" in arms:
        p = medians["presence"]
        print(f"batches over 16 KiB: {p['batches_over_16k']:.0f} (max {p['batch_bytes_max']:.0f} bytes) — goal none "
              f"{'met' if p['batches_over_16k'] == 0 else 'NOT met'}")
        goal = args.interval * 1000 + 100
        print(f"join → batch p99: {p['join_p99_ms']:.0f} ms — goal ≤ {goal:.0f} ms {'met' if p['join_p99_ms'] <= goal else 'NOT met'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.environ.get("DIFFSTREAM", os.path.join(ROOT, ".build/release/diffstream")))
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
    parser.add_argument("--arms", default="presence,none")
    parser.add_argument("--feed", default="board")
    parser.add_argument("--interval", type=float, default=1)
    parser.add_argument("--grace", type=float, default=5)
    parser.add_argument("--names", action="store_true")
    parser.add_argument("--diffstream-args", default="")
    parser.add_argument("--keep-logs", action="store_true")
    args = parser.parse_args()
    arms = [arm.strip() for arm in args.arms.split(",") if arm.strip()]
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"no {args.binary}: swift build -c release --product diffstream (or --binary / DIFFSTREAM)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = min(20000, hard) if hard != resource.RLIM_INFINITY else 20000
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    if limit < args.users + 200:
        sys.exit(f"the open-file limit is {limit}: too few for {args.users} users")

    work = tempfile.mkdtemp(prefix="presence-churn-")
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h"], capture_output=True, text=True).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}, repo {commit}")
    print(f"# users={args.users} rate={args.rate:g}/s rounds={args.rounds} arms={','.join(arms)} feed={args.feed} "
          f"interval={args.interval:g}s grace={args.grace:g}s names={args.names} binary={args.binary} {args.diffstream_args}", flush=True)
    results = {}
    try:
        for round_ in range(1, args.rounds + 1):
            for arm in (arms if round_ % 2 == 1 else list(reversed(arms))):
                fields = one_run(arm, args, work)
                results[(arm, round_)] = fields
                text = " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items())
                print(f"RESULT arm={arm} round={round_} load={open('/proc/loadavg').read().split()[0]} {text}", flush=True)
    finally:
        if args.keep_logs:
            print(f"# logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    summary(results, arms, args)


if __name__ == "__main__":
    main()
