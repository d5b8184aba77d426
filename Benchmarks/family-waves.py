#!/usr/bin/env python3
"""Waves of users who come, change their home feed and leave (issue 52, items 3 and 5).

Starts BINARY with the demo family `home.<user>` (`--examples home --family-idle IDLE`), and for each
wave PATCHes the home feed of USERS new users (keep-alive connections from a few threads), then waits
until every member is dropped (`diffstream_family_live{family="home"}` 0 on /metrics). After each wave
it reads the process's RSS (/proc/PID/status), the size of /metrics and the time it takes to answer,
and the count of series naming a member. Prints a table, and the last wave's RSS against the first's.

    python3 Benchmarks/family-waves.py .build-release/release/diffstream --waves 10 --users 10000 --data none
    python3 Benchmarks/family-waves.py .build-release/release/diffstream --waves 10 --users 10000 --data tmp

`--data tmp` keeps members in a fresh temporary directory and also reports the member store's bytes on
disk per user ever seen, and the start time with all of them kept (a restart at the end).

Per wave it also reports the RSS and a /metrics scrape (time, bytes) right after the wave's last write,
while its members are live (how many: `live`), and the process's peak RSS so far (VmHWM); at the end, the
run's wall time.

`--side nchan`: the same waves against nginx + nchan with one channel per user
(Benchmarks/nchan/nginx-family.conf.template, `nchan_message_timeout` = --idle rounded up): a user's change
is one POST of their home document (the data of DiffStream's home.u00000 snapshot, taken from BINARY, the
user's name put in) to /pub/<user>; a wave is over when /status shows no stored message and no channel.
Memory is VmRSS and Pss summed over nginx's processes (Pss splits the shared memory); /status stands in
for /metrics. No data directory.
Exit status 1 when `--budget` is given and the last wave's RSS passes the first's by more than it (0.10:
10%).
"""
import argparse
import concurrent.futures
import http.client
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(rf"{field}:\s+(\d+)", status.read()).group(1))


def rss_kib(pid):
    return status_kib(pid)


def metrics(port, path="/metrics"):
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path)
    body = connection.getresponse().read().decode()
    connection.close()
    return body, time.monotonic() - started


def value(text, name):
    match = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    return float(match.group(1)) if match else None


def start(binary, port, data, idle):
    process = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", str(port), "--examples", "home", "--data", data,
                                "--family-idle", str(idle), "--max-connections-per-ip", "0"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, time.monotonic() - started
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"{binary} exited with {process.returncode}")
            time.sleep(0.01)


def write_users(port, users, threads, request, accepted):
    """One write per user, `request(user)` -> (method, path, body), over `threads` keep-alive connections."""
    def work(chunk):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for user in chunk:
            method, path, body = request(user)
            for attempt in range(3):  # the server closes a keep-alive connection after its request limit
                try:
                    connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
                    reply = connection.getresponse()
                    reply.read()
                    break
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            else:
                raise SystemExit(f"{method} {path}: the connection closed three times")
            if reply.status not in accepted:
                raise SystemExit(f"{method} {path}: {reply.status}")
        connection.close()
    chunks = [users[index::threads] for index in range(threads)]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, chunks))


class DiffStreamSide:
    """The binary with the demo family; a user's change is a PATCH of their home feed."""
    scrape = "/metrics"

    def __init__(self, binary, data, idle):
        self.binary, self.data, self.idle = binary, data, idle
        self.port = free_port()
        self.process, _ = start(binary, self.port, data, idle)
        self.pids = [self.process.pid]

    def write(self, users, threads):
        write_users(self.port, users, threads, lambda user: (
            "PATCH", f"/feeds/home.{user}", json.dumps({"recommendedHeader": {"title": f"Mine, {user}"}})), (200,))

    def live(self):
        return value(metrics(self.port)[0], 'diffstream_family_live{family="home"}')

    def settled(self):
        return self.live() == 0

    def memory(self):
        return rss_kib(self.process.pid), None, status_kib(self.process.pid, "VmHWM")

    def restart(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process, seconds = start(self.binary, self.port, self.data, self.idle)
        return seconds

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


class NchanSide:
    """nginx + nchan, one channel per user; a user's change is one POST of their home document."""
    scrape = "/status"

    def __init__(self, binary, idle, work):
        spec = importlib.util.spec_from_file_location("family_arrival", os.path.join(HERE, "family-arrival.py"))
        self.fa = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.fa)
        self.document = self.fa.size_document(binary, work)
        self.server = self.fa.Nchan("auto", max(1, int(-(-idle // 1))), work)
        self.port, self.pids = self.server.port, self.server.pids

    def write(self, users, threads):
        template = self.fa.TEMPLATE_USER
        write_users(self.port, users, threads, lambda user: (
            "POST", f"/pub/{user}", self.document.replace(template, user).replace(template.capitalize(), user.capitalize())),
            (201, 202))

    def live(self):
        return int(self.server.status()["channels"])

    def settled(self):
        return self.server.empty_check() is True

    def memory(self):
        rss, pss = self.fa.memory_kib(self.pids)
        return rss, pss, sum(status_kib(pid, "VmHWM") for pid in self.pids)

    def stop(self):
        self.server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--waves", type=int, default=10)
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--data", default="none", help="none, or tmp for a fresh temporary directory")
    parser.add_argument("--side", default="diffstream", choices=["diffstream", "nchan"])
    parser.add_argument("--idle", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--budget", type=float, help="fail when the last wave's RSS passes the first's by more (0.10)")
    arguments = parser.parse_args()

    run_began = time.monotonic()
    print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, load average "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}, side {arguments.side}, data {arguments.data}, "
          f"{arguments.waves} waves of {arguments.users}, {arguments.binary}", flush=True)
    directory = tempfile.mkdtemp(prefix="family-waves-") if arguments.data == "tmp" or arguments.side == "nchan" else None
    data = os.path.join(directory, "data") if arguments.data == "tmp" else "none"
    if arguments.side == "nchan":
        side = NchanSide(arguments.binary, arguments.idle, directory)
    else:
        side = DiffStreamSide(arguments.binary, data, arguments.idle)
    rows = []
    try:
        for wave in range(arguments.waves):
            users = [f"w{wave}u{index}" for index in range(arguments.users)]
            began = time.monotonic()
            side.write(users, arguments.threads)
            writes = time.monotonic() - began
            peak_rss, _, _ = side.memory()
            peak_text, peak_seconds = metrics(side.port, side.scrape)
            live = side.live()
            while not side.settled():
                time.sleep(0.2)  # a benchmark's poll of the server's own count, not a test's wait
            text, seconds = metrics(side.port, side.scrape)
            members = len(re.findall(r'feed="home\.', text))
            rss, pss, hwm = side.memory()
            rows.append((wave + 1, (wave + 1) * arguments.users, rss, len(text), seconds, members, writes))
            print(f"wave {wave + 1:2d}: {(wave + 1) * arguments.users:7d} users ever seen, RSS {rss / 1024:7.1f} MiB"
                  + (f" (Pss {pss / 1024:.1f})" if pss is not None else "")
                  + f", {side.scrape} {len(text):6d} B in {seconds * 1000:6.1f} ms, member series {members}, "
                  f"{arguments.users / writes:7.0f} writes/s; after the writes: live {live:.0f}, RSS {peak_rss / 1024:.1f} MiB, "
                  f"{side.scrape} {len(peak_text)} B in {peak_seconds * 1000:.1f} ms; peak RSS so far {hwm / 1024:.1f} MiB",
                  flush=True)
        if arguments.data == "tmp" and arguments.side == "diffstream":
            store = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(data) for name in names)
            print(f"store on disk: {store} B, {store / (arguments.waves * arguments.users):.0f} B per user ever seen")
            seconds = side.restart()
            text, scrape = metrics(side.port)
            print(f"start with {arguments.waves * arguments.users} members kept: {seconds:.2f} s to accept, "
                  f"RSS {rss_kib(side.process.pid) / 1024:.1f} MiB; /metrics {len(text)} B in {scrape * 1000:.1f} ms")
    finally:
        side.stop()
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
    growth = rows[-1][2] / rows[0][2] - 1
    print(f"RSS after the last wave against the first: {growth * 100:+.1f}%")
    print(f"wall time: {time.monotonic() - run_began:.1f} s; load average now {' '.join(open('/proc/loadavg').read().split()[:3])}")
    if arguments.budget is not None and growth > arguments.budget:
        raise SystemExit(f"over budget: {growth * 100:+.1f}% > {arguments.budget * 100:.0f}%")


if __name__ == "__main__":
    main()
