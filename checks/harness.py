"""Shared by the end-to-end and browser tests: run the real diffstream binary and wait for things."""
import json
import os
import pathlib
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A diffstream process on 127.0.0.1; `log` collects its stderr lines."""

    def __init__(self, port=0, tls=None, extra=(), public=None, env=None, preexec_fn=None, name=None):
        binary = os.environ.get("DIFFSTREAM_BIN", str(ROOT / ".build" / "debug" / "diffstream"))
        # In memory unless told where (`--data`): the default ./data would litter the checkout and carry
        # feeds from one test into the next.
        data = [] if any(str(flag).startswith("--data") for flag in extra) else ["--data", "none"]
        args = [binary, "--host", "127.0.0.1", "--port", str(port), "--public", str(public or ROOT / "Public"), "--heartbeat", "2",
                *data, *extra]
        if tls:
            args += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
        self.scheme = "https" if tls else "http"
        self.name = name
        self.log = []
        self.port = None
        self.listening = threading.Event()
        self.process = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                        env={**os.environ, **(env or {})}, preexec_fn=preexec_fn)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.listening.wait(20):
            self.stop()
            raise RuntimeError("server did not start:\n" + "".join(self.log))

    def _read(self):
        for line in self.process.stderr:
            self.log.append(line)
            match = re.search(r"listening on https?://[^ ]+:(\d+)", line)
            if match and not self.listening.is_set():
                self.port = int(match.group(1))
                self.listening.set()

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def call(self, method, path, body=None, headers=None, raw=None):
        """(status, headers, parsed JSON or bytes) for one request; HTTP errors are returned, not raised."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", **(headers or {})})
        context = ssl._create_unverified_context() if self.scheme == "https" else None
        try:
            with urllib.request.urlopen(request, timeout=15, context=context) as response:
                status, response_headers, payload = response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            status, response_headers, payload = error.code, error.headers, error.read()
        try:
            payload = json.loads(payload) if payload else None
        except ValueError:
            pass
        return status, response_headers, payload

    def request(self, method, path, body=None, headers=None):
        status, _, payload = self.call(method, path, body, headers)
        assert 200 <= status < 300, f"{method} {path} -> {status} {payload}"
        return payload

    def wait_log(self, pattern, timeout=10):
        return wait_for(lambda: next((line for line in self.log if re.search(pattern, line)), None), timeout=timeout,
                        message=f"log line matching {pattern!r}")

    def alive(self):
        return self.process.poll() is None

    def rss_kib(self):
        for line in open(f"/proc/{self.process.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.name:
            directory = ARTIFACTS / "e2e"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"{self.name}.log").write_text("".join(self.log))


def wait_for(predicate, timeout=15, interval=0.05, message="condition"):
    """Polls until `predicate()` is truthy (bounded); returns its value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as error:  # the thing may be mid-update
            last = error
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message}; last value: {last!r}")


def save_screenshot(driver, name):
    directory = ARTIFACTS / "browser"
    directory.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(directory / f"{name}.png"))
