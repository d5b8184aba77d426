"""The command line: --help, bad values (exit 2 with a clear message), environment variables, flags win."""
import json
import os
import subprocess
import urllib.request

import pytest

from e2e_helpers import BINARY, SSEClient, clean_environment, free_port
from e2e_helpers import run_binary as run


def test_help_exits_zero_and_lists_every_option():
    result = run("--help")
    assert result.returncode == 0, result.stderr
    for option in ["--host", "--port", "--public", "--token", "--heartbeat", "--replay", "--max-connections", "--max-connections-per-ip", "--log-level", "--log-format",
                   "--allow-origin", "--stream-buffer", "--compression", "--header-timeout", "--idle-timeout", "--max-body", "--demo",
                   "--data", "--set-aside-damaged", "--max-feeds", "--max-feed-bytes", "--max-store-bytes", "--jwt-secret-file",
                   "--jwt-public-key", "--private", "--public-feeds", "--open-writes", "--public-origin", "--max-presence-feeds", "token"]:
        assert option in result.stdout, option
    assert "DIFFSTREAM_" in result.stdout


BAD_VALUES = [
    (["--port", "70000"], "--port"), (["--port", "-1"], "--port"), (["--port", "http"], "--port"),
    (["--heartbeat", "x"], "--heartbeat"), (["--heartbeat", "0"], "--heartbeat"), (["--heartbeat", "0.05"], "--heartbeat"),
    (["--heartbeat", "1e3"], "--heartbeat"), (["--replay", "-5"], "--replay"),
    (["--max-connections", "0"], "--max-connections"), (["--log-level", "loud"], "--log-level"), (["--log-format", "xml"], "--log-format"),
    (["--max-connections-per-ip", "-1"], "--max-connections-per-ip"),
    (["--stream-buffer", "10"], "--stream-buffer"), (["--compression", "maybe"], "--compression"),
    (["--header-timeout", "0"], "--header-timeout"), (["--idle-timeout", "soon"], "--idle-timeout"),
    (["--max-body", "-1"], "--max-body"), (["--public", "/nonexistent/dir"], "/nonexistent/dir"),
    (["--token", "short"], "token"), (["--token", "has a space in it"], "token"), (["--nope"], "--nope"),
    (["--port"], "--port"), (["--host", "999.1.1.1"], "999.1.1.1"),
    (["--max-feeds", "0"], "--max-feeds"), (["--max-feed-bytes", "10"], "--max-feed-bytes"),
    (["--max-store-bytes", "lots"], "--max-store-bytes"), (["--public-origin", "example.com"], "--public-origin"),
    (["--public-origin", "https://example.com/path"], "--public-origin"),
    (["--max-presence-feeds", "0"], "--max-presence-feeds"), (["--max-presence-feeds", "many"], "--max-presence-feeds"),
]


@pytest.mark.parametrize("args,mention", BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_bad_values_exit_2_with_a_message_naming_them(args, mention, public_dir):
    defaults = [flag for flag in (["--port", "0"], ["--public", str(public_dir)]) if flag[0] not in args]
    result = run(*sum(defaults, []), *args)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert mention in result.stderr, result.stderr
    assert "listening" not in result.stderr


def test_a_port_in_use_exits_2(start, public_dir):
    server = start()
    result = run("--port", str(server.port), "--public", str(public_dir))
    assert result.returncode == 2 and str(server.port) in result.stderr, result.stderr


@pytest.mark.parametrize("name,value", [("DIFFSTREAM_PORT", "abc"), ("DIFFSTREAM_HEARTBEAT", "0"), ("DIFFSTREAM_LOG_LEVEL", "loud"),
                                        ("DIFFSTREAM_COMPRESSION", "maybe"), ("DIFFSTREAM_MAX_BODY", "x")])
def test_bad_environment_values_exit_2_naming_the_variable(name, value, public_dir):
    result = run("--public", str(public_dir), env={"DIFFSTREAM_PORT": "0", name: value})
    assert result.returncode == 2 and name in result.stderr, result.stderr


def test_environment_variables_are_used(start):
    port = free_port()
    server = start(env={"DIFFSTREAM_TOKEN": "env-token-123", "DIFFSTREAM_ALLOW_ORIGIN": "https://env.example",
                        "DIFFSTREAM_MAX_BODY": "500", "DIFFSTREAM_COMPRESSION": "off", "DIFFSTREAM_HEARTBEAT": "1"},
                   port=port)
    assert server.port == port
    good = {"Authorization": "Bearer env-token-123"}
    assert server.http("PUT", "/feeds/e", json_body={"sections": []}).status == 401
    assert server.http("PUT", "/feeds/e", json_body={"sections": []}, headers=good).status == 201
    assert server.http("PUT", "/feeds/e", body=b" " * 501, headers=good).status == 413
    reply = server.http("GET", "/feeds/home", headers={"Accept-Encoding": "gzip"})
    assert reply.headers["Content-Encoding"] is None and reply.headers["Access-Control-Allow-Origin"] == "https://env.example"
    with SSEClient(server.port, "/feeds/week/events") as client:
        client.expect_event("snapshot")
        block = client.next_block(timeout=2.5)
        assert block is not None and block["comment"] == ["heartbeat"]


def test_a_heartbeat_with_a_fraction_is_announced_as_given_and_kept(start):
    server = start("--heartbeat", "0.5")
    with SSEClient(server.port, "/feeds/week/events") as client:
        first = client.next_block(timeout=5)
        assert first is not None and first["comment"] == ["heartbeat 0.5"], first
        client.expect_event("snapshot")
        block = client.next_block(timeout=1.5)
        assert block is not None and block["comment"] == ["heartbeat"], block


def test_environment_port_host_and_public_directory(tmp_path):
    public = tmp_path / "env-public"
    public.mkdir()
    (public / "index.html").write_text("from the environment")
    port = free_port()
    # No flags at all (the fixture always passes some), so this one runs the binary by hand.
    process = subprocess.Popen([str(BINARY)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                               env=clean_environment({"DIFFSTREAM_PUBLIC": str(public), "DIFFSTREAM_PORT": str(port),
                                                      "DIFFSTREAM_HOST": "127.0.0.1"}), cwd=tmp_path)
    try:
        for line in process.stderr:
            if "listening on http://" in line:
                break
        else:
            raise AssertionError("the server did not start")
        assert line.rstrip().endswith(f"http://127.0.0.1:{port}")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert response.read() == b"from the environment"
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_flags_win_over_the_environment(start):
    server = start("--token", "flag-token-456", "--max-body", "100000",
                   env={"DIFFSTREAM_TOKEN": "env-token-123", "DIFFSTREAM_PORT": "abc", "DIFFSTREAM_MAX_BODY": "10"})
    assert server.http("PUT", "/feeds/f", json_body={"sections": []}, headers={"Authorization": "Bearer env-token-123"}).status == 401
    assert server.http("PUT", "/feeds/f", json_body={"sections": []}, headers={"Authorization": "Bearer flag-token-456"}).status == 201


def test_log_lines(start):
    server = start()
    server.put("logged", {"sections": []})
    server.http("GET", "/nope")
    server.wait_log(r"PUT /feeds/logged 201 \d+B \d+ms")
    server.wait_log(r"GET /nope 404 \d+B \d+ms")
    with SSEClient(server.port, "/feeds/logged/events", headers={"Last-Event-ID": "ds1.0123456789abcdef.1"}) as client:
        client.expect_event("snapshot")
        server.wait_log(r"sse connect #(\d+) /feeds/logged/events from 127\.0\.0\.1:\d+ last-event-id=ds1\.0123456789abcdef\.1")
    server.wait_log(r"sse disconnect #\d+ /feeds/logged/events \(.+\)")


def test_log_format_json_writes_one_object_per_line_with_metadata(start):
    server = start("--log-format", "json")
    server.put("jsonlog", {"sections": []})
    server.http("GET", "/feeds/jsonlog?token=never-logged-123")
    server.wait_log(r'"message":"GET /feeds/jsonlog 200 \d+B \d+ms"')
    with SSEClient(server.port, "/feeds/jsonlog/events") as client:
        client.expect_event("snapshot")
        server.wait_log(r'"message":"sse connect #\d+ /feeds/jsonlog/events')
    server.wait_log(r'"message":"sse disconnect #\d+ /feeds/jsonlog/events')
    lines = [json.loads(line) for line in server.log_text().splitlines() if line.strip()]
    assert all({"timestamp", "level", "label", "message"} <= line.keys() for line in lines)
    request = next(line for line in lines if line["message"].startswith("GET /feeds/jsonlog "))
    assert request["level"] == "info" and request["label"] == "diffstream"
    assert request["metadata"]["feed"] == "jsonlog" and request["metadata"]["status"] == "200"
    assert request["metadata"]["path"] == "/feeds/jsonlog" and int(request["metadata"]["ms"]) >= 0
    disconnect = next(line for line in lines if line["message"].startswith("sse disconnect"))
    assert disconnect["metadata"]["feed"] == "jsonlog" and disconnect["metadata"]["reason"]
    assert "never-logged-123" not in server.log_text()


def test_a_quiet_json_log_announces_the_port_as_json(start):
    server = start("--log-level", "error", "--log-format", "json")
    line = server.wait_log(r"listening on").string
    assert json.loads(line)["message"] == f"diffstream listening on http://127.0.0.1:{server.port}"


def test_log_level_warning_is_quiet_but_still_announces_the_port(start):
    server = start("--log-level", "warning")
    server.http("GET", "/healthz")
    assert "GET /healthz" not in server.log_text()


def test_max_connections_over_the_file_limit_is_reported(start):
    server = start("--max-connections", "1000000")
    server.wait_log("exceeds what the open-file limit")
    assert os.path.exists(f"/proc/{server.pid}")


def test_a_port_in_use_is_one_line_that_says_what_to_do(start, tmp_path):
    """Issue 37: the port taken (here by another diffstream) is said in one line, with the flag to use."""
    server = start()
    result = run("--port", str(server.port), "--public", tmp_path, "--data", "none")
    assert result.returncode == 2, result.stderr
    assert "--help" not in result.stderr, result.stderr  # a start that failed: one line, no usage hint
    errors = [line for line in result.stderr.splitlines() if line.startswith("diffstream:")]
    assert errors == [f"diffstream: port {server.port} on 127.0.0.1 is in use by another program "
                      f"(bind(127.0.0.1:{server.port}) failed: Address already in use (errno 98)); "
                      "stop it, or choose another port with --port (--port 0 picks a free one)"], result.stderr


def test_a_locked_data_directory_names_the_flag(start, tmp_path):
    data = tmp_path / "data"
    start("--data", data)
    result = run("--port", "0", "--public", tmp_path, "--data", data)
    assert result.returncode == 2
    assert f"the data directory '{data}' is in use by another diffstream" in result.stderr
    assert "; stop it or choose another --data" in result.stderr
