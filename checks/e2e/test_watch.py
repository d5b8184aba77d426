"""`diffstream watch` as docs/client-swift.md documents it (issue 50), run both ways the docs name: through
the server's binary (`diffstream watch`, which runs diffstream-watch in its place) and as diffstream-watch
itself. Bad usage of any kind exits 2 (ArgumentParser's own code for a missing argument would be 64), and
standard output holds data only: the connection's state goes to standard error unless the live view is
on a terminal. (checks/e2e/test_swift_client.py covers the codes 3 to 6 through the client's streams.)"""
import json
import queue
import shutil
import subprocess
import threading

import pytest

from e2e_helpers import BINARY, clean_environment, free_port

WATCHER = BINARY.parent / "diffstream-watch"
PROGRAMS = {"diffstream watch": [str(BINARY), "watch"], "diffstream-watch": [str(WATCHER)]}


@pytest.fixture(params=sorted(PROGRAMS))
def watch(request):
    """Runs the program with the arguments to completion: CompletedProcess with text output."""
    if not WATCHER.exists():
        pytest.fail(f"no {WATCHER}: build it with 'swift build --product diffstream-watch'")

    def run(*args, env=None):
        return subprocess.run([*PROGRAMS[request.param], *map(str, args)], capture_output=True, text=True, timeout=30,
                              env=clean_environment(env), stdin=subprocess.DEVNULL)
    return run


def data_lines(feed):
    """A predicate: the line is part of the plain view of feeds (its name and version, a section, an item)."""
    return lambda line: line == "" or line.startswith(f"{feed} v") or line.startswith("  ▸ ") or line.startswith("    ")


def put_plain(server, feed="plain", title="Hello"):
    server.put(feed, {"sections": [{"id": "top", "model": {"title": "Top"}, "items": [
        {"id": "a", "kind": "card", "model": {"title": title}}]}]})


USAGE = {
    "no arguments": [],
    "no feed": ["URL"],
    "a name with a space and a bang": ["URL", "bad name!"],
    "a name starting with a dot": ["URL", ".hidden"],
    "a name of 65 characters": ["URL", "x" * 65],
    "a bad name after a good one": ["URL", "plain", "no/slash"],
    "an unknown option": ["--bogus", "URL", "plain"],
    "an option without its value": ["URL", "plain", "--token"],
    "not an http(s) URL": ["ftp://127.0.0.1/", "plain"],
    "--cacert with --insecure": ["--cacert", "/dev/null", "--insecure", "URL", "plain"],
}


@pytest.mark.parametrize("case", sorted(USAGE))
def test_bad_usage_exits_2_with_a_message_and_nothing_on_stdout(watch, server, case):
    put_plain(server)
    url = f"http://127.0.0.1:{server.port}"
    result = watch("--once", *[url if arg == "URL" else arg for arg in USAGE[case]])
    assert result.returncode == 2, (case, result.returncode, result.stderr)
    assert result.stdout == "", (case, result.stdout)
    assert result.stderr.startswith("diffstream watch: "), (case, result.stderr)


def test_a_bad_name_is_named_in_the_message(watch, server):
    result = watch("--once", f"http://127.0.0.1:{server.port}", "bad name!")
    assert result.returncode == 2 and "'bad name!' is not a feed id" in result.stderr, result.stderr


def test_help_exits_0_on_stdout(watch):
    result = watch("--help")
    assert result.returncode == 0, result.stderr
    assert "Exit codes" in result.stdout and "--once" in result.stdout


def test_once_into_a_pipe_writes_data_only_and_the_state_on_stderr(watch, server):
    put_plain(server)
    result = watch("--once", f"http://127.0.0.1:{server.port}", "plain")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "plain v1", lines
    assert all(map(data_lines("plain"), lines)), lines
    assert "[" not in result.stdout and "(waiting)" not in result.stdout, result.stdout
    assert "diffstream watch: connecting" in result.stderr.splitlines(), result.stderr
    assert "diffstream watch: live" in result.stderr.splitlines(), result.stderr


def test_once_json_writes_json_lines_only(watch, server):
    put_plain(server)
    put_plain(server, "other")
    result = watch("--once", "--json", f"http://127.0.0.1:{server.port}", "plain", "other")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted(line["feed"] for line in lines) == ["other", "plain"], lines
    assert "diffstream watch: live" in result.stderr.splitlines(), result.stderr


def test_a_feed_not_found_exits_5_with_nothing_on_stdout(watch, server):
    result = watch("--once", f"http://127.0.0.1:{server.port}", "nosuchfeed")
    assert result.returncode == 5, result.stderr
    assert result.stdout == "", result.stdout  # not "[connecting]" nor "nosuchfeed: (waiting)"
    assert "not found (404)" in result.stderr


def test_an_unreachable_server_exits_6_with_nothing_on_stdout(watch):
    result = watch("--once", f"http://127.0.0.1:{free_port()}", "plain")
    assert result.returncode == 6, result.stderr
    assert result.stdout == "", result.stdout
    assert "cannot reach" in result.stderr


def test_following_into_a_pipe_writes_each_view_as_data_only(server):
    """Not --once: every update is a view of data lines on stdout; the states (connecting, live) and
    nothing else on stderr. Awaits each view, then ends the watcher."""
    put_plain(server, title="first")
    process = subprocess.Popen([str(BINARY), "watch", f"http://127.0.0.1:{server.port}", "plain"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_environment())
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in process.stdout] + [lines.put(None)], daemon=True).start()
    seen = []

    def until(wanted):
        while True:
            line = lines.get(timeout=20)
            assert line is not None, f"watch ended: {process.wait()} {process.stderr.read()}"
            seen.append(line)
            if line == wanted:
                return
    try:
        until("plain v1")
        put_plain(server, title="second")
        until("plain v2")
        until("")  # the end of the second view
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert all(map(data_lines("plain"), seen)), seen
    assert any("second" in line for line in seen), seen
    assert {"diffstream watch: connecting", "diffstream watch: live"} <= set(stderr.splitlines()), stderr


def test_the_launcher_without_diffstream_watch_exits_2(tmp_path):
    """`diffstream watch` looks for diffstream-watch beside itself, then on PATH: found nowhere, it says
    so and exits 2."""
    lonely = tmp_path / "diffstream"
    shutil.copy2(BINARY, lonely)
    result = subprocess.run([str(lonely), "watch", "--once", "http://127.0.0.1:1", "plain"], capture_output=True, text=True,
                            timeout=30, env=clean_environment({"PATH": str(tmp_path)}), stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stderr
    assert "diffstream-watch" in result.stderr and result.stdout == ""
