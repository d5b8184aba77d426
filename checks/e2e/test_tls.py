"""HTTPS: the page and event streams over TLS, old protocol versions refused, stalled handshakes closed."""
import json
import queue
import socket
import subprocess
import threading
import time

import pytest

from e2e_helpers import run_binary as run


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    other = directory / "other-key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-out", str(other)], check=True, capture_output=True)
    return cert, key, other


def curl(*args, timeout=10):
    return subprocess.run(["curl", "-sS", *args], capture_output=True, text=True, timeout=timeout)


def test_tls_serves_the_page_and_streams_events(start, certificate):
    cert, key, _ = certificate
    server = start("--tls-cert", cert, "--tls-key", key)
    assert "listening on https://" in server.log_text()
    page = curl("--cacert", str(cert), f"https://127.0.0.1:{server.port}/")
    assert page.returncode == 0 and "<title>e2e</title>" in page.stdout
    process = subprocess.Popen(["curl", "-sN", "--cacert", str(cert), f"https://127.0.0.1:{server.port}/feeds/home/events"],
                               stdout=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        def next_data():
            while True:
                line = lines.get(timeout=10)
                if line.startswith("data:"):
                    return json.loads(line[5:])
        assert next_data()["version"] == 1
        patched = curl("--cacert", str(cert), "-X", "PATCH", "-d", '{"banner":null}', f"https://127.0.0.1:{server.port}/feeds/home")
        assert json.loads(patched.stdout)["version"] == 2
        assert next_data()["version"] == 2
    finally:
        process.kill()
        process.wait()


def test_tls_refuses_old_versions_and_plain_http(start, certificate):
    cert, key, _ = certificate
    server = start("--tls-cert", cert, "--tls-key", key)
    old = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}", "-tls1_1"], input="", capture_output=True,
                         text=True, timeout=10)
    assert old.returncode != 0 or "Cipher is (NONE)" in old.stdout
    modern = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}", "-alpn", "http/1.1"], input="",
                            capture_output=True, text=True, timeout=10)
    assert "ALPN protocol: http/1.1" in modern.stdout and ("TLSv1.3" in modern.stdout or "TLSv1.2" in modern.stdout)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            answer = sock.recv(100)  # a TLS alert or nothing, then the connection closes
        except ConnectionResetError:
            answer = b""
        assert b"HTTP/1.1" not in answer
    # A client that stalls mid-handshake costs one connection and nothing else.
    stalled = socket.create_connection(("127.0.0.1", server.port))
    stalled.sendall(bytes.fromhex("16030100"))
    ok = curl("--cacert", str(cert), f"https://127.0.0.1:{server.port}/healthz")
    assert ok.stdout.strip() == '{"status":"ok"}'
    stalled.close()


@pytest.mark.parametrize("which", ["missing", "mismatch", "only-cert"])
def test_bad_certificates_are_a_clear_startup_error(certificate, which, public_dir):
    cert, key, other = certificate
    args = {"missing": ["--tls-cert", str(cert), "--tls-key", "/nonexistent.pem"],
            "mismatch": ["--tls-cert", str(cert), "--tls-key", str(other)],
            "only-cert": ["--tls-cert", str(cert)]}[which]
    result = run("--port", "0", "--public", str(public_dir), *args)
    assert result.returncode == 2
    assert {"missing": "cannot read --tls-key", "mismatch": "does not match", "only-cert": "--tls-key"}[which] in result.stderr, result.stderr


def test_a_stalled_tls_handshake_is_closed_after_its_timeout(start, certificate):
    cert, key, _ = certificate
    server = start("--tls-cert", cert, "--tls-key", key)
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(bytes.fromhex("1603010200"))  # the start of a ClientHello, then nothing
        started = time.monotonic()
        try:
            assert sock.recv(100) == b""
        except ConnectionResetError:
            pass
        assert 8 < time.monotonic() - started < 15  # the handshake timeout is 10 s
    server.wait_log("tls handshake timeout")
