"""DiffStream as a library: builds the example package `Examples/Scoreboard` (a program of one's own that
depends on DiffStream by path and hosts its own view model through `DiffStreamServer`), runs it on port 0
and drives it over HTTP: its action reaches a subscriber as a minimal batch, its swift-log handler gets
the request line, and its own swift-metrics counter is on `/metrics`. Then `Examples/Shelves`, a second
program that hosts a family (`shelf.<user>`, issue 38) with its own view model and loader: each key is a
member of its own, and a change to one reaches that member's subscribers only. And `Examples/DocSnippets`, the
Swift snippets of the README, docs/view-models.md and docs/client-swift.md (issue 50), built with warnings as errors,
so a snippet the library no longer compiles fails here (checks/structure/test_doc_snippets.py keeps them verbatim).

The first build of an example takes minutes (it is a separate package with its own `.build`); set
DIFFSTREAM_SKIP_EMBEDDING=1 to skip this module. It runs in the suite's first pass only: the second pass's
settings (`E2E_LOOPS`, `DIFFSTREAM_E2E_DATA`) are the `diffstream` command's, which the example does not use.
"""
import http.client
import os
import re
import shlex
import socket
import subprocess
import threading

import pytest

from conftest import ARTIFACTS, E2E_DATA, E2E_LOOPS, Server, finish, log_name
from e2e_helpers import BINARY, ROOT, SSEClient, apply_ops, check_minimal, clean_environment, wait_until

PACKAGE = ROOT / "Examples" / "Scoreboard"
SHELVES = ROOT / "Examples" / "Shelves"
DOC_SNIPPETS = ROOT / "Examples" / "DocSnippets"

if os.environ.get("DIFFSTREAM_SKIP_EMBEDDING"):
    pytest.skip("DIFFSTREAM_SKIP_EMBEDDING is set: the example package is not built", allow_module_level=True)
if E2E_DATA != "none" or E2E_LOOPS:
    pytest.skip("the second pass's E2E_LOOPS and DIFFSTREAM_E2E_DATA do not apply to the example program", allow_module_level=True)


class ExampleServer(Server):
    """The example program instead of `diffstream`: configured through its environment, read like a Server."""

    def __init__(self, binary, env, log_path, package=PACKAGE):
        self.host = "127.0.0.1"
        self.args = [str(binary)]
        self.lines = []
        self.changed = threading.Condition()
        self.eof = False
        self.expected_exit = False
        self.log_file = open(log_path, "w", buffering=1, encoding="utf-8")
        self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        env=clean_environment(env), cwd=package)
        self.pid = self.process.pid
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self.port = int(self.wait_log(r"diffstream listening on http://127\.0\.0\.1:(\d+)", timeout=20).group(1))
        except AssertionError:
            self.kill()
            self.close_log()
            raise


def build_example(package, product, variable):
    """The binary of the example package's `product`: `variable`'s, one already built (scripts/test.sh builds
    the examples in release, in the release binary's scratch directory, where they reuse every module of
    that build); else built here (its own scratch directory, under the package)."""
    prebuilt = os.environ.get(variable)
    if prebuilt:
        assert os.access(prebuilt, os.X_OK), f"{variable}={prebuilt} is not an executable"
        return prebuilt
    scratch = package / ".build"
    build = subprocess.run(["swift", "build", "--package-path", str(package), "--scratch-path", str(scratch), "--product", product],
                           capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert build.returncode == 0, f"building {package} failed:\n{build.stdout[-4000:]}\n{build.stderr[-4000:]}"
    binary = scratch / "debug" / product
    assert binary.exists(), f"no binary at {binary}"
    return binary


@pytest.fixture(scope="module")
def example_binary():
    """Scoreboard's binary: DIFFSTREAM_EXAMPLE_BINARY, or built here."""
    return build_example(PACKAGE, "Scoreboard", "DIFFSTREAM_EXAMPLE_BINARY")


@pytest.fixture(scope="module")
def shelves_binary():
    """Shelves' binary: DIFFSTREAM_SHELVES_BINARY, or built here."""
    return build_example(SHELVES, "Shelves", "DIFFSTREAM_SHELVES_BINARY")


@pytest.fixture
def scoreboard(example_binary, tmp_path, request):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = ExampleServer(example_binary, {"SCOREBOARD_PORT": "0", "SCOREBOARD_DATA": str(tmp_path / "data")},
                           ARTIFACTS / f"{log_name(request.node)}-scoreboard.log")
    yield server
    problems = finish([server])
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_the_example_program_hosts_its_view_model(scoreboard):
    assert scoreboard.get("/feeds")  # the API is served without a page directory
    assert scoreboard.http("GET", "/").status == 404  # and no page
    with SSEClient(scoreboard.port, "/feeds/scores/events") as client:
        _, document = client.expect_event("snapshot")
        goals = {item["id"]: item["model"]["goals"] for section in document["sections"] for item in section["items"]}
        assert goals == {"away": 0, "home": 0}

        scoreboard.ok("POST", "/feeds/scores/actions/goal", {"team": "home"})
        _, batch = client.expect_event("batch")
        after = apply_ops(document, batch["ops"])
        check_minimal(document, after, batch["ops"])
        assert batch["ops"] == [{"op": "update", "item": "home", **{k: v for k, v in batch["ops"][0].items() if k not in ("op", "item")}}]
        assert {item["id"]: item["model"]["goals"] for section in after["sections"] for item in section["items"]} == {"away": 0, "home": 1}

    assert scoreboard.http("POST", "/feeds/scores/actions/goal", json_body={"team": "nobody"}).status == 422


def test_the_programs_log_handler_gets_the_request_line(scoreboard):
    scoreboard.ok("POST", "/feeds/scores/actions/goal", {"team": "away"})
    # The program bootstrapped swift-log's StreamLogHandler: its format, with the request's metadata.
    line = scoreboard.wait_log(r"^\S+ info diffstream: .*\[HTTPServer\] POST /feeds/scores/actions/goal 200").string
    assert re.search(r"\bfeed=scores\b", line) and re.search(r"\bstatus=200\b", line) and re.search(r"\bmethod=POST\b", line), line


def test_the_programs_own_metric_is_on_metrics(scoreboard):
    assert scoreboard.metrics().get("scoreboard_goals_total") == 0
    scoreboard.ok("POST", "/feeds/scores/actions/goal", {"team": "home"})
    scoreboard.ok("POST", "/feeds/scores/actions/goal", {"team": "home"})
    metrics = scoreboard.metrics()
    assert metrics["scoreboard_goals_total"] == 2
    assert "diffstream_requests_total" in metrics  # beside DiffStream's own


def test_sigterm_shuts_the_program_down_gracefully(scoreboard):
    with SSEClient(scoreboard.port, "/feeds/scores/events") as client:
        client.expect_event("snapshot")
        assert scoreboard.stop() == 0
        assert client.wait_closed()
    scoreboard.wait_log(r"signal 15: shutting down")
    scoreboard.wait_log(r"\bshut down$")


def port_free(port):
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def test_the_example_runs_beside_a_diffstream_with_default_settings(example_binary, tmp_path, request):
    """Issue 37: both with their defaults, in one folder: diffstream on 8080 with ./data, the example on
    8090 with ./scoreboard-data. Both serve."""
    if not (port_free(8080) and port_free(8090)):
        pytest.skip("port 8080 or 8090 is taken on this machine: the defaults cannot be tried here")
    (tmp_path / "Public").symlink_to(ROOT / "Public")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    logs = [ARTIFACTS / f"{log_name(request.node)}-{name}.log" for name in ("diffstream", "scoreboard")]
    diffstream = subprocess.Popen([str(BINARY)], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=open(logs[0], "w"), env=clean_environment())
    example = subprocess.Popen([str(example_binary)], cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=open(logs[1], "w"), env=clean_environment())

    def serving(process, port, path):
        """True once it answers; "exited" if it stopped (then a port taken since the check is a skip)."""
        if process.poll() is not None:
            return "exited"
        return answers(port, path) == 200

    try:
        for process, log, port, path in [(diffstream, logs[0], 8080, "/healthz"), (example, logs[1], 8090, "/feeds/scores")]:
            state = wait_until(lambda: serving(process, port, path), timeout=20, message=f"a server on {port}")
            if state == "exited":
                text = log.read_text()
                if "is in use by another program" in text:
                    pytest.skip(f"port {port} was taken after the check: {text.strip().splitlines()[-1]}")
                pytest.fail(f"the server for {port} exited: {text[-2000:]}")
        assert (tmp_path / "data").is_dir() and (tmp_path / "scoreboard-data").is_dir()
    finally:
        for process in (example, diffstream):
            if process.poll() is None:
                process.terminate()
        codes = [process.wait(20) for process in (example, diffstream)]
    assert codes == [0, 0], codes


def answers(port, path):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


@pytest.mark.parametrize("taken", ["port", "data"])
def test_a_start_failure_is_one_line_in_the_programs_terms(example_binary, start, tmp_path, taken):
    """A port in use or a locked data folder: one line naming the cause and the example's own setting,
    exit 1, no fatal error or backtrace."""
    data = tmp_path / "data"
    server = start("--data", data)
    env = {"SCOREBOARD_PORT": str(server.port), "SCOREBOARD_DATA": str(tmp_path / "other")} if taken == "port" \
        else {"SCOREBOARD_PORT": "0", "SCOREBOARD_DATA": str(data)}
    result = subprocess.run([str(example_binary)], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=clean_environment(env))
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "Fatal error" not in result.stderr and "backtrace" not in result.stderr.lower(), result.stderr
    if taken == "port":
        assert last == f"scoreboard: port {server.port} on 127.0.0.1 is in use by another program " \
                       f"(bind(127.0.0.1:{server.port}) failed: Address already in use (errno 98)); set SCOREBOARD_PORT to another port (0 picks a free one)", last
    else:
        assert last.startswith(f"scoreboard: the data directory '{data}' is in use by another diffstream") and last.endswith("; set SCOREBOARD_DATA to another folder"), last


@pytest.fixture
def shelves(shelves_binary, tmp_path, request):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = ExampleServer(shelves_binary, {"SHELVES_PORT": "0", "SHELVES_DATA": str(tmp_path / "data")},
                           ARTIFACTS / f"{log_name(request.node)}-shelves.log", package=SHELVES)
    yield server
    problems = finish([server])
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def books(document):
    return [item["model"]["title"] for section in document["sections"] for item in section["items"]]


def test_the_second_program_hosts_a_family_of_its_own(shelves):
    """Issue 38: a program of its own hosts a family. Two keys are two members made by its loader, each
    with its own snapshot; an action on one and a PATCH of the other reach only that member's stream."""
    alice, bob = shelves.get("/feeds/shelf.alice"), shelves.get("/feeds/shelf.bob")
    assert (alice["feed"], alice["sections"][0]["model"], books(alice)) == ("shelf.alice", {"owner": "Alice"}, ["5 letters", "Books for alice"])
    assert (bob["feed"], bob["sections"][0]["model"], books(bob)) == ("shelf.bob", {"owner": "Bob"}, ["3 letters", "Books for bob"])
    assert alice["history"] != bob["history"]
    assert shelves.http("GET", "/feeds/shelf.nobody").status == 404  # the loader's NoSuchMember

    with SSEClient(shelves.port, "/feeds/shelf.alice/events") as alice_stream, SSEClient(shelves.port, "/feeds/shelf.bob/events") as bob_stream:
        _, alice_document = alice_stream.expect_event("snapshot")
        _, bob_document = bob_stream.expect_event("snapshot")

        shelves.ok("POST", "/feeds/shelf.alice/actions/add", {"title": "Dune"})
        _, batch = alice_stream.expect_event("batch")
        assert batch["feed"] == "shelf.alice" and [(op["op"], op["item"]["id"]) for op in batch["ops"]] == [("insert", "dune")]
        alice_document = apply_ops(alice_document, batch["ops"])
        assert books(alice_document) == ["5 letters", "Books for alice", "Dune"]

        shelves.ok("PATCH", "/feeds/shelf.bob", {"owner": "Robert"})
        _, batch = bob_stream.expect_event("batch")
        assert batch["feed"] == "shelf.bob"
        bob_document = apply_ops(bob_document, batch["ops"])
        assert bob_document["sections"][0]["model"] == {"owner": "Robert"} and books(bob_document) == ["3 letters", "Books for bob"]
        # Each stream got its own member's change only: the next event on Alice's is the one made now.
        shelves.ok("POST", "/feeds/shelf.alice/actions/add", {"title": "Emma"})
        _, batch = alice_stream.expect_event("batch")
        assert batch["feed"] == "shelf.alice" and books(apply_ops(alice_document, batch["ops"]))[-1] == "Emma"

    assert books(shelves.get("/feeds/shelf.bob")) == ["3 letters", "Books for bob"]
    assert shelves.get("/feeds/shelf.alice")["sections"][0]["model"] == {"owner": "Alice"}
    assert shelves.http("POST", "/feeds/shelf.alice/actions/add", json_body={"title": "..."}).status == 422
    assert shelves.http("POST", "/feeds/shelf.alice/actions/add", json_body={"title": "x" * 101}).status == 422
    assert shelves.http("POST", "/feeds/shelf.alice/actions/add", json_body={"title": "DUNE"}).status == 422  # already on it


def test_the_docs_swift_snippets_build():
    """Every target of Examples/DocSnippets compiles, warnings as errors: DIFFSTREAM_DOC_SNIPPETS_BUILD, the command
    scripts/test.sh built it with (release, in the release binary's scratch directory: a no-op when its build
    succeeded), run from the repository's root; else a debug build in the package's own scratch directory."""
    command = os.environ.get("DIFFSTREAM_DOC_SNIPPETS_BUILD")
    arguments = shlex.split(command) if command else [
        "swift", "build", "--package-path", str(DOC_SNIPPETS), "--scratch-path", str(DOC_SNIPPETS / ".build"), "-Xswiftc", "-warnings-as-errors"]
    assert arguments[:2] == ["swift", "build"] and "Examples/DocSnippets" in " ".join(arguments), arguments
    build = subprocess.run(arguments, cwd=ROOT, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    errors = [line for line in build.stdout.splitlines() + build.stderr.splitlines() if re.search(r"\b(error|warning): ", line)]
    assert build.returncode == 0, "a snippet of the docs does not compile (its file in Examples/DocSnippets/Sources names the document):\n" + \
        "\n".join(dict.fromkeys(errors[:60]) or [build.stdout[-4000:], build.stderr[-4000:]])
