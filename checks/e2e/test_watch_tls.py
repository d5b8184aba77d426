"""`diffstream watch` over TLS (issue 25): https streams go through the client's OpenSSL transport
(TLSStreamClient), with `--cacert FILE` or OpenSSL's default CA paths, or `--insecure`; a certificate that is
not accepted is exit 6 (unreachable) with a message naming the problem; an unreadable CA file is exit 2."""
import json
import queue
import subprocess
import threading

import pytest

from e2e_helpers import BINARY, clean_environment, free_port


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    directory = tmp_path_factory.mktemp("watch-tls")
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    other_key, other_cert = directory / "other-key.pem", directory / "other-cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(other_key), "-out", str(other_cert),
                    "-days", "2", "-subj", "/CN=elsewhere", "-addext", "subjectAltName=DNS:elsewhere.example"], check=True, capture_output=True)
    return cert, key, other_cert


def curl(*args):
    return subprocess.run(["curl", "-sS", *map(str, args)], capture_output=True, text=True, timeout=10)


def watch(*args, timeout=30):
    return subprocess.run([str(BINARY), "watch", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=clean_environment(), stdin=subprocess.DEVNULL)


@pytest.fixture
def tls_server(start, certificates):
    cert, key, _ = certificates
    return start("--tls-cert", cert, "--tls-key", key)


def get(server, cert, feed):
    reply = curl("--cacert", cert, f"https://127.0.0.1:{server.port}/feeds/{feed}")
    return json.loads(reply.stdout)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_cacert_prints_the_snapshot_equal_to_get(tls_server, certificates, host):
    cert, _, _ = certificates
    result = watch("--json", "--once", "--cacert", cert, f"https://{host}:{tls_server.port}", "home")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == get(tls_server, cert, "home")


def test_insecure_accepts_a_self_signed_certificate(tls_server, certificates):
    cert, _, _ = certificates
    result = watch("--json", "--once", "--insecure", f"https://127.0.0.1:{tls_server.port}", "home")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[0]) == get(tls_server, cert, "home")


@pytest.mark.parametrize("flags", [[], ["--cacert", "OTHER"]])
def test_an_unaccepted_certificate_is_unreachable_with_the_reason(tls_server, certificates, flags):
    _, _, other = certificates
    flags = [str(other) if flag == "OTHER" else flag for flag in flags]
    result = watch("--json", "--once", *flags, f"https://127.0.0.1:{tls_server.port}", "home")
    assert result.returncode == 6, result.stderr
    assert "certificate" in result.stderr and "not accepted" in result.stderr, result.stderr
    assert result.stdout == ""


def test_a_name_the_certificate_does_not_cover_is_refused(start, tmp_path):
    # The server's certificate names elsewhere.example only; trusted as a CA, it is still the wrong name.
    key = tmp_path / "k.pem"
    cert = tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
                    "-subj", "/CN=elsewhere", "-addext", "subjectAltName=DNS:elsewhere.example"], check=True, capture_output=True)
    server = start("--tls-cert", cert, "--tls-key", key)
    result = watch("--json", "--once", "--cacert", cert, f"https://127.0.0.1:{server.port}", "home")
    assert result.returncode == 6, result.stderr
    assert "mismatch" in result.stderr, result.stderr
    insecure = watch("--json", "--once", "--insecure", f"https://127.0.0.1:{server.port}", "home")
    assert insecure.returncode == 0, insecure.stderr


def test_bad_usage(certificates, tmp_path):
    cert, _, _ = certificates
    missing = watch("--json", "--once", "--cacert", tmp_path / "absent.pem", "https://127.0.0.1:1", "home")
    assert missing.returncode == 2 and "CA file" in missing.stderr, missing.stderr
    both = watch("--json", "--once", "--cacert", cert, "--insecure", "https://127.0.0.1:1", "home")
    assert both.returncode == 2, both.stderr


def test_a_live_stream_over_tls_follows_changes(tls_server, certificates):
    cert, _, _ = certificates
    process = subprocess.Popen([str(BINARY), "watch", "--json", "--cacert", str(cert), f"https://127.0.0.1:{tls_server.port}", "home"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               env=clean_environment())
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(line)) for line in process.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=20)
        patched = curl("--cacert", cert, "-X", "PATCH", "-d", '{"banner":null}', f"https://127.0.0.1:{tls_server.port}/feeds/home")
        version = json.loads(patched.stdout)["version"]
        assert version > first["version"]
        while True:
            line = lines.get(timeout=20)
            if line["version"] == version:
                break
        assert line == get(tls_server, cert, "home")
    finally:
        process.terminate()
        process.wait(10)


def test_plain_http_through_the_transport_keeps_the_exit_codes(start):
    # --insecure on an http URL takes the same transport: a refusal's body (chunked or not) is still read.
    server = start("--private", "--token", "admin-token-of-the-tests")
    result = watch("--json", "--once", "--insecure", f"http://127.0.0.1:{server.port}", "home")
    assert result.returncode == 3 and "unauthorized (401)" in result.stderr, result.stderr
    missing = watch("--json", "--once", "--insecure", "--token", "admin-token-of-the-tests", f"http://127.0.0.1:{server.port}", "nothing")
    assert missing.returncode == 5, missing.stderr
    found = watch("--json", "--once", "--insecure", "--token", "admin-token-of-the-tests", f"http://127.0.0.1:{server.port}", "home")
    assert found.returncode == 0, found.stderr


def test_a_stream_over_tls_resumes_after_the_server_restarts(start, certificates, tmp_path):
    cert, key, _ = certificates
    port = free_port()
    data = tmp_path / "data"
    server = start("--data", data, "--tls-cert", cert, "--tls-key", key, port=port)
    process = subprocess.Popen([str(BINARY), "watch", "--json", "--cacert", str(cert), f"https://127.0.0.1:{port}", "home"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               env=clean_environment())
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(line)) for line in process.stdout], daemon=True).start()
    try:
        lines.get(timeout=20)
        server.kill()
        server = start("--data", data, "--tls-cert", cert, "--tls-key", key, port=port)
        patched = curl("--cacert", cert, "-X", "PATCH", "-d", '{"banner":null}', f"https://127.0.0.1:{port}/feeds/home")
        version = json.loads(patched.stdout)["version"]
        while True:
            line = lines.get(timeout=30)
            if line["version"] == version:
                break
        assert line == get(server, cert, "home")
    finally:
        process.terminate()
        process.wait(10)
