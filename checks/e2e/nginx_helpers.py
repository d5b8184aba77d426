"""nginx as a shared cache in front of one DiffStream origin, for the tests of reads through HTTP caches
(checks/e2e/test_log_cache.py): deploy/nginx-cache.conf as it is, with its listen port, upstream and
directories changed. nginx cannot listen on port 0, so it gets a free port the way the tests that
restart a server get theirs (free_port)."""
import os
import pathlib
import re
import shutil
import socket
import subprocess

import pytest

from e2e_helpers import ROOT, free_port, wait_until

CONFIG = ROOT / "deploy" / "nginx-cache.conf"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


def require_nginx():
    if NGINX is None:
        pytest.fail("nginx is not installed: scripts/setup.sh --test installs it")


def configuration(origin_port, port, directory):
    """deploy/nginx-cache.conf for loopback: nginx on `port`, DiffStream on `origin_port`, every file
    nginx writes under `directory` (its workers run as the user starting it: as root, `user root;`)."""
    text = CONFIG.read_text()
    replacements = [
        (r"server 127\.0\.0\.1:8080;", f"server 127.0.0.1:{origin_port};"),
        (r"listen 80;", f"listen 127.0.0.1:{port};"),
        (r"proxy_cache_path /var/cache/nginx/diffstream ", f"proxy_cache_path {directory}/cache "),
        (r"pid [^;]+;", f"pid {directory}/nginx.pid;"),
        (r"error_log /dev/stderr warn;", f"error_log {directory}/error.log warn;"),
        (r"access_log /dev/stdout;", f"log_format cache '$upstream_cache_status $status $request_uri';\n    access_log {directory}/access.log cache;"),
        (r"worker_rlimit_nofile 65536;", "worker_rlimit_nofile 20000;"),
    ]
    for pattern, replacement in replacements:
        text, count = re.subn(pattern, replacement, text)
        assert count == 1, f"deploy/nginx-cache.conf no longer has {pattern!r}"
    temp = "".join(f"    {kind}_temp_path {directory}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    text = text.replace("http {\n", "http {\n" + temp, 1)
    if os.geteuid() == 0:
        text = "user root;\n" + text
    return text


class NginxCache:
    """nginx on a free loopback port in front of the origin on `origin_port`."""

    def __init__(self, origin_port, directory):
        require_nginx()
        self.directory = pathlib.Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.origin_port = origin_port
        self.port = free_port()
        self.config = self.directory / "nginx.conf"
        self.config.write_text(configuration(origin_port, self.port, self.directory))
        self.process = subprocess.Popen([NGINX, "-p", str(self.directory), "-e", str(self.directory / "error.log"), "-c", str(self.config), "-g", "daemon off;"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def ready():
            if self.process.poll() is not None:
                raise AssertionError(f"nginx exited with {self.process.returncode}: {self.process.stderr.read().decode()}\n{self.error_log()}")
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        wait_until(ready, timeout=10, message=f"nginx on port {self.port}")

    def error_log(self):
        path = self.directory / "error.log"
        return path.read_text() if path.exists() else ""

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
