"""The Swift client (DiffStreamClient) end to end, through `diffstream watch --json` against the real server.

Each line `watch --json` prints is one update of a feed: `{"feed","version","sections","id"}`, the body of
`GET /feeds/{feed}` plus the event id. The Swift unit tests (Tests/DiffStreamClientTests) drive the same
resume and gap logic without sockets.
"""
import json
import queue
import random
import subprocess
import threading

from e2e_helpers import BINARY, JWT_SECRET, clean_environment, free_port, jwt_token, rights


class Watch:
    """A running `diffstream watch`: its stdout lines, parsed, arrive on a queue."""

    def __init__(self, *args, env=None):
        self.process = subprocess.Popen([str(BINARY), "watch", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, text=True, env=clean_environment(env))
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            parsed = json.loads(line)
            parsed["_raw"] = line.rstrip("\n")
            self.lines.put(parsed)
        self.lines.put(None)

    def next(self, timeout=20):
        line = self.lines.get(timeout=timeout)
        assert line is not None, f"watch ended: {self.process.wait()} {self.process.stderr.read()}"
        return line

    def until(self, predicate, timeout=30):
        """Lines up to and including the first that satisfies `predicate`."""
        seen = []
        while True:
            line = self.next(timeout)
            seen.append(line)
            if predicate(line):
                return seen

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(10)


def history_and_version(line):
    _, history, version = line["id"].split(".")  # the test reads ids; clients never do
    return history, int(version)


def random_doc(rng, tag=""):
    sections = []
    for s in rng.sample(["a", "b", "c", "d"], rng.randint(1, 4)):
        items = [{"id": f"i{n}", "kind": rng.choice(["k", "j"]), "model": {"n": rng.randint(0, 3), "t": tag}}
                 for n in rng.sample(range(30), rng.randint(0, 8)) if f"i{n}"]
        sections.append({"id": s, "model": rng.choice([None, {"title": s.upper()}]), "items": items})
    seen, result = set(), []
    for section in sections:  # item ids are unique across the snapshot
        section["items"] = [i for i in section["items"] if not (i["id"] in seen or seen.add(i["id"]))]
        result.append(section)
    return {"sections": result}


def get_body(server, feed):
    reply = server.http("GET", f"/feeds/{feed}")
    assert reply.status == 200, reply
    return json.loads(reply.body)


def without_raw(line):
    return {key: value for key, value in line.items() if key != "_raw"}


def test_watch_json_last_line_equals_get(start):
    server = start()
    rng = random.Random(1)
    server.put("news", random_doc(rng))
    watch = Watch("--json", f"http://127.0.0.1:{server.port}", "news")
    try:
        first = watch.next()
        assert without_raw(first) == get_body(server, "news")
        for _ in range(40):
            server.put("news", random_doc(rng))
        final = get_body(server, "news")
        lines = watch.until(lambda line: line["version"] == final["version"])
        assert without_raw(lines[-1]) == final
        # Byte-exact: the line is the body of GET /feeds/news as the server wrote it (history and id included).
        raw = lines[-1]["_raw"]
        assert raw == server.http("GET", "/feeds/news").body.decode().rstrip("\n")
        versions = [first["version"]] + [line["version"] for line in lines]
        assert versions == sorted(set(versions)), "versions move forward one update at a time"
    finally:
        watch.stop()


def test_watch_once_prints_the_current_snapshot_and_exits(start):
    server = start()
    server.put("news", random_doc(random.Random(2)))
    result = subprocess.run([str(BINARY), "watch", "--json", "--once", f"http://127.0.0.1:{server.port}", "news"],
                            capture_output=True, text=True, timeout=30, env=clean_environment())
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert without_raw(json.loads(lines[0])) == get_body(server, "news")


def test_watch_once_with_a_cache_prints_only_the_current_snapshot_and_exits_6_without_a_server(start, tmp_path):
    server = start()
    rng = random.Random(5)
    server.put("news", random_doc(rng))
    cache = tmp_path / "cache"
    url = f"http://127.0.0.1:{server.port}"

    def once(url):
        return subprocess.run([str(BINARY), "watch", "--json", "--once", "--cache", str(cache), url, "news"],
                              capture_output=True, text=True, timeout=30, env=clean_environment())

    first = once(url)  # fills the cache
    assert first.returncode == 0, first.stderr
    server.put("news", random_doc(rng))
    second = once(url)  # the cache holds version 1; only the current version 2 is printed
    assert second.returncode == 0, second.stderr
    lines = second.stdout.splitlines()
    assert len(lines) == 1, lines
    assert without_raw(json.loads(lines[0])) == get_body(server, "news")
    same = once(url)  # the cache is current: the resumed stream confirms it, one line
    assert same.returncode == 0 and len(same.stdout.splitlines()) == 1, (same.returncode, same.stdout, same.stderr)
    gone = once(f"http://127.0.0.1:{free_port()}")  # a cached snapshot is not the server's: exit 6
    assert gone.returncode == 6, (gone.returncode, gone.stdout, gone.stderr)
    assert gone.stdout == "", "a stale snapshot is never printed by --once"


def test_watch_many_feeds_on_one_stream(start):
    server = start()
    rng = random.Random(3)
    for feed in ("one", "two"):
        server.put(feed, random_doc(rng))
    watch = Watch("--json", f"http://127.0.0.1:{server.port}", "one", "two")
    try:
        got = {}
        while len(got) < 2:
            line = watch.next()
            got[line["feed"]] = line
        for _ in range(10):
            server.put(rng.choice(["one", "two"]), random_doc(rng))
        for feed in ("one", "two"):
            final = get_body(server, feed)
            if got[feed]["version"] != final["version"]:
                lines = watch.until(lambda line, feed=feed, final=final: line["feed"] == feed and line["version"] == final["version"])
                got[feed] = lines[-1]
            assert without_raw(got[feed]) == final
    finally:
        watch.stop()


def test_watch_exit_codes(start, tmp_path):
    secret = tmp_path / "jwt.secret"
    secret.write_text(JWT_SECRET + "\n")
    server = start("--jwt-secret-file", secret, "--private", "--token", "admin-token-of-the-tests")
    server.put("mine", random_doc(random.Random(4)), headers={"Authorization": "Bearer admin-token-of-the-tests"})
    url = f"http://127.0.0.1:{server.port}"

    def run(*args):
        return subprocess.run([str(BINARY), "watch", "--json", "--once", *args], capture_output=True, text=True, timeout=30,
                              env=clean_environment())

    unauthorized = run(url, "mine")
    assert unauthorized.returncode == 3, unauthorized.stderr
    assert "unauthorized (401)" in unauthorized.stderr
    other = jwt_token(rights(subscribe=["other-*"]))
    forbidden = run("--token", other, url, "mine")
    assert forbidden.returncode == 4, forbidden.stderr
    assert "forbidden (403)" in forbidden.stderr
    reader = jwt_token(rights(subscribe=["*"]))
    missing = run("--token", reader, url, "nothing-here")
    assert missing.returncode == 5, missing.stderr
    assert "not found (404)" in missing.stderr
    found = run("--token", reader, url, "mine")
    assert found.returncode == 0, found.stderr
    unreachable = run(f"http://127.0.0.1:{free_port()}", "mine")
    assert unreachable.returncode == 6, unreachable.stderr
    assert "cannot reach" in unreachable.stderr


def test_property_random_puts_with_kill_9_restarts_and_a_new_history(start, tmp_path):
    """300 random PUTs; the server is killed (-9) and restarted on its --data several times, and once
    started on an empty directory (a new history). The client's last snapshot equals the server's;
    within a history versions only move forward; a new history's first line is the server's state."""
    rng = random.Random(25)
    port = free_port()
    data = tmp_path / "data"
    server = start("--data", data, port=port)
    server.put("prop", random_doc(rng, "0"))
    watch = Watch("--json", f"http://127.0.0.1:{port}", "prop")
    try:
        lines = [watch.next()]
        restarts = sorted(rng.sample(range(20, 280), 5))
        empty_at = restarts[2]
        for n in range(300):
            if n in restarts:
                server.kill()
                if n == empty_at:
                    data = tmp_path / "empty"
                server = start("--data", data, port=port)
                if n == empty_at:
                    server.put("prop", random_doc(rng, str(n)))
                    expected = get_body(server, "prop")
                    seen = watch.until(lambda line: history_and_version(line)[0] != history_and_version(lines[-1])[0])
                    lines += seen
                    # The new history is announced with its snapshot: the server's state at that version.
                    assert without_raw(seen[-1]) == expected
            server.put("prop", random_doc(rng, str(n)))
        final = get_body(server, "prop")
        final_history = None
        lines += watch.until(lambda line: line["version"] == final["version"] and history_and_version(line)[0] != history_and_version(lines[0])[0])
        assert without_raw(lines[-1]) == final
        last = {}
        for line in lines:
            history, version = history_and_version(line)
            assert version > last.get(history, 0), f"version {version} after {last.get(history)} in history {history}"
            last[history] = version
            final_history = history
        assert len(last) == 2 and final_history != history_and_version(lines[0])[0]
    finally:
        watch.stop()


def test_watch_into_a_pipe_writes_plain_lines(start):
    """Not a terminal: the view as plain lines, no screen clearing, bold or inverse video (issue 37)."""
    server = start()
    server.put("plain", {"sections": [{"id": "top", "model": {"title": "Top"}, "items": [
        {"id": "a", "kind": "card", "model": {"title": "Hello"}}]}]})
    result = subprocess.run([str(BINARY), "watch", "--once", f"http://127.0.0.1:{server.port}", "plain"],
                            capture_output=True, text=True, timeout=30, env=clean_environment())
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout, repr(result.stdout)
    lines = result.stdout.splitlines()
    assert "plain v1" in lines and "  ▸ top — Top" in lines
    assert any(line.startswith("    card a ") and "Hello" in line for line in lines), lines
