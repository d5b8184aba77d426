"""Fixtures for the browser tests: the real diffstream binary and headless Chromium (selenium)."""
import json
import os
import pathlib
import re
import socket
import subprocess
import threading
import time
import urllib.request
import ssl

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A diffstream process; `log` collects its stderr lines."""

    def __init__(self, port=0, tls=None, extra=()):
        binary = os.environ.get("DIFFSTREAM_BIN", str(ROOT / ".build" / "debug" / "diffstream"))
        args = [binary, "--host", "127.0.0.1", "--port", str(port), "--public", str(ROOT / "Public"), "--heartbeat", "2", *extra]
        if tls:
            args += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        self.scheme = "https" if tls else "http"
        self.log = []
        self.listening = threading.Event()
        self.process = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        if not self.listening.wait(20):
            self.stop()
            raise RuntimeError("server did not start:\n" + "".join(self.log))

    def _read(self):
        for line in self.process.stderr:
            self.log.append(line)
            match = re.search(r"listening on https?://[^:]+:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                self.listening.set()

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={"Content-Type": "application/json"})
        context = ssl._create_unverified_context() if self.scheme == "https" else None
        with urllib.request.urlopen(req, timeout=10, context=context) as response:
            return json.loads(response.read() or b"null")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def browser():
    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900",
                 "--ignore-certificate-errors"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def wait_for(predicate, timeout=15, interval=0.05, message="condition"):
    """Polls until `predicate()` is truthy (bounded); returns its value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as error:  # the page may be mid-update
            last = error
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message}; last value: {last!r}")


def save_screenshot(driver, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
