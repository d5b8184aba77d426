"""End-to-end fixtures: the real `diffstream` binary on an ephemeral port.

`start(*flags, env=..., public=..., preexec_fn=..., port=...)` starts a server and returns a `Server`;
every server a test started must still be alive when the test ends (it survived) and must then shut
down cleanly on SIGTERM (exit 0). Each server's stderr is written line by line, as it arrives, to
`test-artifacts/e2e/<test>-<n>.log`.
"""
import atexit
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from e2e_helpers import BINARY, ROOT, clean_environment, e2e_redis_flags, parse_metrics  # noqa: E402
from nginx_helpers import NginxCache  # noqa: E402

ARTIFACTS = ROOT / "test-artifacts" / "e2e"
TEST_TIME_LIMIT = float(os.environ.get("E2E_TEST_TIME_LIMIT", "90"))
E2E_LOOPS = os.environ.get("E2E_LOOPS", "")  # e.g. E2E_LOOPS=1; unset: the server's default (one per core)
# Servers started without `--data` get `--data none` (in memory), so the default ./data never litters the
# repository; with DIFFSTREAM_E2E_DATA=tmp each such server gets its own fresh temporary directory instead.
E2E_DATA = os.environ.get("DIFFSTREAM_E2E_DATA", "none")


def data_flags(flags, env):
    if any(str(flag) == "--data" or str(flag).startswith("--data=") for flag in flags) or "DIFFSTREAM_DATA" in (env or {}):
        return []
    if E2E_DATA == "tmp":
        directory = tempfile.mkdtemp(prefix="diffstream-e2e-data-")
        atexit.register(shutil.rmtree, directory, True)
        return ["--data", directory]
    return ["--data", "none"]


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # http.client.HTTPMessage: case-insensitive, None when absent
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<Reply {self.status} {self.body[:300]!r}>"


class Server:
    """A running diffstream process. `lines` collects its stderr; waiting on them uses a condition."""

    def __init__(self, flags, env=None, public=None, preexec_fn=None, port=0, log_path=None, host="127.0.0.1"):
        self.host = host
        self.args = [str(BINARY), "--host", host, "--port", str(port), "--public", str(public), *data_flags(flags, env), *e2e_redis_flags(flags, env), *map(str, flags)]
        if E2E_LOOPS and "--loops" not in self.args:  # run the whole suite with another number of event loops
            self.args += ["--loops", E2E_LOOPS]
        self.lines = []
        self.changed = threading.Condition()
        self.eof = False
        self.expected_exit = False
        self.log_file = open(log_path, "w", buffering=1, encoding="utf-8") if log_path else None
        if self.log_file:
            self.log_file.write("$ " + " ".join(self.args) + "\n")
        self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        env=clean_environment(env), preexec_fn=preexec_fn)
        self.pid = self.process.pid
        threading.Thread(target=self._read, daemon=True).start()
        try:
            match = self.wait_log(r"diffstream listening on https?://(\[[^\]]+\]|[^\s:]+):(\d+)", timeout=20)
        except AssertionError:
            self.kill()
            self.close_log()
            raise
        self.port = int(match.group(2))

    def _read(self):
        for raw_line in self.process.stderr:
            line = raw_line.decode("utf-8", "replace")
            with self.changed:
                if self.log_file:
                    self.log_file.write(line)
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.eof = True
            self.changed.notify_all()

    # Logs ----------------------------------------------------------------------------------------

    def mark(self):
        """The current number of log lines: pass as `since` to wait only for later lines."""
        with self.changed:
            return len(self.lines)

    def wait_log(self, pattern, timeout=10.0, since=0):
        """Waits for a log line matching `pattern` (at or after line `since`); returns the match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        index = since
        with self.changed:
            while True:
                while index < len(self.lines):
                    match = regex.search(self.lines[index])
                    index += 1
                    if match:
                        return match
                remaining = deadline - time.monotonic()
                if self.eof or remaining <= 0:
                    tail = "".join(self.lines[-20:])
                    state = "the server's stderr ended" if self.eof else f"{timeout} s passed"
                    raise AssertionError(f"no log line matching {pattern!r} ({state}); log tail:\n{tail}")
                self.changed.wait(remaining)

    def log_text(self):
        with self.changed:
            return "".join(self.lines)

    # HTTP ----------------------------------------------------------------------------------------

    def http(self, method, path, body=None, json_body=None, headers=None, timeout=15):
        """One request on a fresh connection; returns a Reply (errors are replies, not exceptions)."""
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            return Reply(response.status, response.headers, data)
        finally:
            connection.close()

    def ok(self, method, path, json_body=None, **options):
        """A request that must succeed (2xx); returns its JSON (or None)."""
        reply = self.http(method, path, json_body=json_body, **options)
        assert 200 <= reply.status < 300, f"{method} {path} -> {reply.status} {reply.body[:500]!r}"
        return reply.json() if reply.body else None

    def get(self, path):
        return self.ok("GET", path)

    def put(self, feed, document, **options):
        return self.ok("PUT", f"/feeds/{feed}", document, **options)

    def metrics(self):
        reply = self.http("GET", "/metrics")
        assert reply.status == 200
        return parse_metrics(reply.body.decode())

    # Process -------------------------------------------------------------------------------------

    def alive(self):
        return self.process.poll() is None

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def thread_names(self):
        """The names of the process's threads, as `top -H` and /proc/PID/task/TID/comm show them."""
        names = set()
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            with open(f"/proc/{self.pid}/task/{tid}/comm") as comm:
                names.add(comm.read().strip())
        return names

    def send_signal(self, signum):
        """For tests that stop the server themselves (the fixture then only checks it is gone)."""
        self.expected_exit = True
        self.process.send_signal(signum)

    def stop(self, signum=signal.SIGTERM, timeout=10):
        """Signals the server and waits; returns the exit code, or None if it had to be killed."""
        if self.alive():
            self.expected_exit = True
            self.process.send_signal(signum)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        return self.process.wait()

    def kill(self):
        self.expected_exit = True
        if self.alive():
            self.process.kill()
        self.process.wait()

    def close_log(self):
        with self.changed:
            deadline = time.monotonic() + 2
            while not self.eof and time.monotonic() < deadline:
                self.changed.wait(0.1)
            if self.log_file:
                self.log_file.write(f"# exit code {self.process.returncode}\n")
                self.log_file.close()
                self.log_file = None


@pytest.fixture(scope="session", autouse=True)
def _binary_and_artifacts():
    if not BINARY.exists():
        pytest.exit(f"no diffstream binary at {BINARY}: run `swift build --product diffstream` or set DIFFSTREAM_BIN", returncode=2)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.log"):
        old.unlink()


def make_public_dir(root):
    """A minimal public directory, so the tests never depend on the real page being there."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text("<!doctype html><title>e2e</title><p>e2e</p>\n")
    return root


def finish(servers):
    """Checks that every server survived, then stops it with SIGTERM; returns the problems found."""
    problems = []
    for index, server in enumerate(servers):
        if server.expected_exit:
            if server.alive():
                server.kill()
        elif not server.alive():
            problems.append(f"server #{index} died during the test (exit {server.process.returncode}):\n"
                            + "".join(server.lines[-40:]))
        else:
            code = server.stop()
            if code != 0:
                problems.append(f"server #{index} did not shut down cleanly on SIGTERM (exit {code}, None = killed after 10 s)")
        server.close_log()
    return problems


def log_name(node):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", node.name)[:100]


@pytest.fixture
def nginx(tmp_path):
    """`nginx(origin_port)` starts an nginx with deploy/nginx-cache.conf in front of the origin (as many as
    a test needs, each stopped after it)."""
    caches = []

    def make(origin_port):
        cache = NginxCache(origin_port, tmp_path / f"nginx-{len(caches)}")
        caches.append(cache)
        return cache
    yield make
    for cache in caches:
        cache.stop()


@pytest.fixture
def public_dir(tmp_path):
    return make_public_dir(tmp_path / "public")


@pytest.fixture
def start(request, public_dir):
    """Factory: start(*flags, env=None, public=None, preexec_fn=None, port=0, host=...) -> Server."""
    servers = []

    def make(*flags, env=None, public=None, preexec_fn=None, port=0, host="127.0.0.1"):
        server = Server(flags, env=env, public=public or public_dir, preexec_fn=preexec_fn, port=port,
                        log_path=ARTIFACTS / f"{log_name(request.node)}-{len(servers)}.log", host=host)
        servers.append(server)
        return server

    yield make
    problems = finish(servers)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def server(start):
    return start()


@pytest.fixture(scope="module")
def start_shared(request, tmp_path_factory):
    """Like `start`, for servers shared by the tests of one module (tables of cases that leave no trace):
    checked and stopped when the module is done."""
    servers = []

    def make(*flags, public=None, env=None):
        server = Server(flags, env=env, public=public or make_public_dir(tmp_path_factory.mktemp("public")),
                        log_path=ARTIFACTS / f"{log_name(request.node)}-shared-{len(servers)}.log")
        servers.append(server)
        return server

    yield make
    problems = finish(servers)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def shared_server(start_shared):
    """One default server for a module's tables of cases."""
    return start_shared()


class TestTookTooLong(Exception):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A per-test time limit (no plugin needed): SIGALRM interrupts a blocked socket call."""
    def expire(signum, frame):
        raise TestTookTooLong(f"{item.nodeid} ran longer than {TEST_TIME_LIMIT} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, TEST_TIME_LIMIT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
