"""Every `import` in the browser library's docs resolves against a real server (issue 50): each module
specifier in a code block of docs/client-js.md, docs/client-js-protocol.md and the README answers 200
with JavaScript, after redirects, and so does every module it imports in turn (relative to where it was
served from). Checked against the servers a reader has:

- a server with a page directory of its own that holds no copy of the library (`--public DIR`: a
  program's own page, or `diffstream --public my-page`), where only the built-in `/_diffstream/` path has it;
- a server started as the README's first command starts it (scripts/demo.sh: `--public Public --demo`);
- `diffstream` started with neither `--public` nor a `./Public` folder (it serves the page built into it).

Also: docs/client-js.md's table of the library's files is exactly the library the binary serves
(scripts/embed-public.py's LIBRARY), so docs/protocol.md can point to that list instead of a count.
"""
import http.client
import importlib.util
import pathlib
import re
import subprocess
import threading
import urllib.parse

import pytest

from conftest import ARTIFACTS, log_name
from e2e_helpers import BINARY, ROOT, clean_environment

DOCS = [ROOT / "docs" / "client-js.md", ROOT / "docs" / "client-js-protocol.md", ROOT / "README.md"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
# `import … from '…'`, `import '…'` and `export … from '…'` (static imports only; the docs use no other).
SPECIFIER = re.compile(r"""(?:\bimport\s+(?:[\w{}\s,*$]+\s+from\s+)?|\bexport\s+[\w{}\s,*$]+\s+from\s+)['"]([^'"]+)['"]""")


def doc_imports():
    """[(doc name, specifier)] for every import in the docs' code blocks."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text()):
            found += [(doc.name, specifier) for specifier in SPECIFIER.findall(block)]
    return found


def test_the_docs_have_imports_to_check():
    specifiers = {specifier for _, specifier in doc_imports()}
    assert "/_diffstream/current/diffstream.js" in specifiers, specifiers
    assert all(s.startswith("/") for s in specifiers), f"a doc imports from a relative or another origin's URL: {specifiers}"


def get(host, port, path):
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def fetch_module(host, port, path):
    """(final path, body) of a module, following redirects; asserts it is JavaScript."""
    for _ in range(5):
        status, headers, body = get(host, port, path)
        if status in (301, 302, 303, 307, 308):
            path = urllib.parse.urljoin(path, headers["Location"])
            continue
        assert status == 200, f"GET {path} -> {status}"
        kind = headers["Content-Type"] or ""
        assert kind.startswith(("text/javascript", "application/javascript")), f"GET {path}: Content-Type {kind}"
        return path, body.decode()
    raise AssertionError(f"GET {path}: too many redirects")


def assert_imports_resolve(host, port):
    """Every import of the docs, and what each module imports in turn, loads from this server."""
    problems = []
    pending = [(f"{doc}", specifier) for doc, specifier in doc_imports()]
    done = set()
    while pending:
        where, path = pending.pop()
        if path in done:
            continue
        done.add(path)
        try:
            final, text = fetch_module(host, port, path)
        except AssertionError as error:
            problems.append(f"{where} imports {path}: {error}")
            continue
        pending += [(final, urllib.parse.urljoin(final, s)) for s in SPECIFIER.findall(text) if s.startswith((".", "/"))]
    assert not problems, "\n".join(problems)
    return done


def test_every_import_resolves_on_a_server_whose_page_directory_has_no_library(start):
    server = start()  # --public: a page directory of its own (an index.html), no copy of the library
    modules = assert_imports_resolve(server.host, server.port)
    assert any(re.fullmatch(r"/_diffstream/[0-9a-f]{12}/stream-hub\.js", path) for path in modules), modules  # followed down
    # What the docs imported before issue 50: not there on such a server.
    assert server.http("GET", "/diffstream.js").status == 404


def test_every_import_resolves_on_the_server_the_demo_starts(start):
    server = start("--demo", public=ROOT / "Public")  # scripts/demo.sh: --public Public --demo
    assert_imports_resolve(server.host, server.port)


def test_every_import_resolves_on_diffstream_without_a_public_folder(tmp_path, request):
    """`diffstream` run where there is no ./Public, without --public: the page built into the binary."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / f"{log_name(request.node)}.log", "w", buffering=1)
    process = subprocess.Popen([str(BINARY), "--host", "127.0.0.1", "--port", "0", "--data", "none"], cwd=tmp_path,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=clean_environment())
    listening = threading.Event()
    port = []

    def read():
        for line in process.stderr:
            log.write(line)
            match = re.search(r"listening on https?://[^ ]+:(\d+)", line)
            if match and not listening.is_set():
                port.append(int(match.group(1)))
                listening.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert listening.wait(20), "the server to say where it listens"
        assert_imports_resolve("127.0.0.1", port[0])
    finally:
        process.terminate()
        assert process.wait(10) == 0
        log.close()


def test_the_documented_module_table_is_the_library_the_binary_serves():
    spec = importlib.util.spec_from_file_location("embed_public", ROOT / "scripts" / "embed-public.py")
    embed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(embed)
    text = (ROOT / "docs" / "client-js.md").read_text()
    table = text[text.index("| file | what it is |"):]
    table = table[:table.index("\n\n")]
    listed = re.findall(r"^\| `([\w.-]+\.js)` \|", table, re.M)
    assert sorted(listed) == sorted(embed.LIBRARY), f"docs/client-js.md lists {listed}; the binary serves {embed.LIBRARY}"
