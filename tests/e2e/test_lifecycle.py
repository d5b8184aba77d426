"""The process: flags, environment, graceful shutdown, TLS."""
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from e2e_helpers import SSEClient, ROOT_BIN, wait_for


def run(*args, env=None):
    return subprocess.run([ROOT_BIN, *args], capture_output=True, text=True, timeout=20, env={**os.environ, **(env or {})})


def test_help_exits_zero():
    result = run("--help")
    assert result.returncode == 0 and "--max-connections" in result.stdout and "DIFFSTREAM_" in result.stdout


@pytest.mark.parametrize("args,mention", [(["--port", "70000"], "--port"), (["--heartbeat", "x"], "--heartbeat"),
                                          (["--log-level", "loud"], "--log-level"), (["--public", "/nonexistent"], "public directory"),
                                          (["--tls-cert", "/tmp/x.pem"], "--tls-key"), (["--nope"], "nope"),
                                          (["--compression", "maybe"], "--compression")])
def test_bad_values_exit_2_with_a_message(args, mention):
    result = run(*args)
    assert result.returncode == 2 and mention in result.stderr


def test_environment_values_and_flags_win(start):
    result = run("--help", env={"DIFFSTREAM_PORT": "abc"})
    assert result.returncode == 0
    bad = run(env={"DIFFSTREAM_PORT": "abc"})
    assert bad.returncode == 2 and "DIFFSTREAM_PORT" in bad.stderr
    server = start("--port", "0", env={"DIFFSTREAM_PORT": "abc", "DIFFSTREAM_TOKEN": "env-token-123"})
    assert server.call("PUT", "/feeds/e", {"sections": []})[0] == 401
    assert server.call("PUT", "/feeds/e", {"sections": []}, headers={"Authorization": "Bearer env-token-123"})[0] == 201


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_graceful_shutdown_ends_streams_and_exits_zero(start, signum):
    server = start()
    client = SSEClient(server, "/feeds/home/events")
    client.next_event()
    started = time.monotonic()
    server.process.send_signal(signum)
    assert client.next_block(timeout=5) is None and client.closed, "the stream ended"
    assert server.process.wait(timeout=5) == 0
    assert time.monotonic() - started < 5


def test_max_connections_over_the_file_limit_is_reported(start):
    server = start("--max-connections", "1000000")
    assert any("exceeds what the open-file limit" in line for line in server.log)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    other = directory / "other-key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-out", str(other)], check=True, capture_output=True)
    return cert, key, other


def test_tls_serves_the_page_and_streams_events(start, certificate):
    cert, key, _ = certificate
    server = start(tls=(cert, key))
    page = subprocess.run(["curl", "-sS", "--cacert", str(cert), f"https://127.0.0.1:{server.port}/"], capture_output=True, text=True, timeout=10)
    assert page.returncode == 0 and "<html" in page.stdout.lower()
    curl = subprocess.Popen(["curl", "-sN", "--cacert", str(cert), f"https://127.0.0.1:{server.port}/feeds/home/events"], stdout=subprocess.PIPE, text=True)
    try:
        def next_data():
            while True:
                line = curl.stdout.readline()
                assert line
                if line.startswith("data:"):
                    return json.loads(line[5:])
        assert next_data()["version"] == 1
        server.request("PATCH", "/feeds/home", {"banner": None})
        assert next_data()["version"] == 2
    finally:
        curl.kill()


def test_tls_refuses_old_versions_and_plain_http(start, certificate):
    cert, key, _ = certificate
    server = start(tls=(cert, key))
    old = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}", "-tls1_1"], input="", capture_output=True, text=True, timeout=10)
    assert old.returncode != 0 or "Cipher is (NONE)" in old.stdout
    modern = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}", "-alpn", "http/1.1"], input="", capture_output=True, text=True, timeout=10)
    assert "ALPN protocol: http/1.1" in modern.stdout and ("TLSv1.3" in modern.stdout or "TLSv1.2" in modern.stdout)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            answer = sock.recv(100)  # a TLS alert or nothing, then the connection closes
        except ConnectionResetError:
            answer = b""
        assert b"HTTP/1.1 200" not in answer
    # A client that stalls mid-handshake costs one connection and nothing else.
    stalled = socket.create_connection(("127.0.0.1", server.port))
    stalled.sendall(bytes.fromhex("16030100"))
    ok = subprocess.run(["curl", "-sS", "--cacert", str(cert), f"https://127.0.0.1:{server.port}/healthz"], capture_output=True, text=True, timeout=10)
    assert ok.stdout.strip() == '{"status":"ok"}'
    stalled.close()


@pytest.mark.parametrize("which", ["missing", "mismatch"])
def test_bad_certificates_are_a_clear_startup_error(certificate, which):
    cert, key, other = certificate
    args = ["--port", "0", "--tls-cert", str(cert), "--tls-key", "/nonexistent.pem" if which == "missing" else str(other)]
    result = run(*args)
    assert result.returncode == 2
    assert ("cannot read --tls-key" if which == "missing" else "does not match") in result.stderr


def test_a_stalled_tls_handshake_is_closed_after_its_timeout(start, certificate):
    cert, key, _ = certificate
    server = start(tls=(cert, key))
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(bytes.fromhex("1603010200"))  # the start of a ClientHello, then nothing
        started = time.monotonic()
        try:
            assert sock.recv(100) == b""
        except ConnectionResetError:
            pass
        assert 8 < time.monotonic() - started < 15  # the handshake timeout is 10 s
    server.wait_log("tls handshake timeout")
