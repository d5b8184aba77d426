"""docs/architecture.md opens with every module, its one job, its dependencies and what it knows nothing
of (issue 36). This checks the table against the package, so it cannot drift:

- the "depends on" column against `swift package dump-package`;
- the "knows nothing of" column against the `import` lines of each module's sources (issue 53).

How the "knows nothing of" column is read. It is a comma-separated list of terms from `TERMS` below, each
naming the modules it stands for ("HTTP" is HTTPCore, HTTPAPI and EpollRuntime; "Redis" is the Redis
modules and hiredis; ...); "everything else" is every module of this package or of another package that
the row's "depends on" column does not name (the toolchain's and the system's modules, such as Foundation,
Dispatch, Glibc or Synchronization, are not "everything else": a row that means them names them, like
`DiffStream`'s "Foundation"); "—" claims nothing. A term the glossary does not know fails the test, so
the column cannot say what is not checked.

What a module knows of is what its sources can name: every module an `import` line of its sources names
(any form: `@_exported`, `@testable`, `package import`, `import struct M.T`, inside `#if` or not), and
every module those re-export with `@_exported import`, through chains of re-exports (`import
DiffStreamServer` brings `FeedServer`, hence `HTTPAPI`). Not the plain imports of its dependencies: "knows
nothing of" is said of the module's own code, and a module above a layer still knows nothing of what that
layer hides (`DiffStreamRedis` links the epoll runtime through `DiffStreamServer` but cannot name it).
The link closure is checked by `test_modules.py` (the one-way graph, the hosting library's closure).
"""
import re

import pytest

from test_platforms import ROOT, dump_package, swift_sources, target_dependencies


@pytest.fixture(scope="module")
def package():
    return dump_package()


def rows():
    """{module: (set of dependencies, list of "knows nothing of" terms)} from the first table of
    docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("| module | its one job | depends on | knows nothing of |")
    found = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == 4, f"a row of the module table without four cells: {line}"
        names = re.findall(r"`([\w-]+)`", cells[0])
        dependencies = set() if cells[2] in ("—", "") else {name.strip() for name in cells[2].split(",")}
        terms = [] if cells[3] in ("—", "") else [term.strip() for term in cells[3].split(",")]
        for name in names:
            found[name] = (dependencies, terms)
    return found


def table():
    """{module: set of dependencies} from the first table of docs/architecture.md."""
    return {name: dependencies for name, (dependencies, _) in rows().items()}


def test_the_table_lists_every_module_once(package):
    modules = {target["name"] for target in package["targets"] if target["type"] != "test"}
    assert set(table()) == modules


def test_each_modules_dependencies_are_package_swifts(package):
    rows = table()
    wrong = {}
    for target in package["targets"]:
        if target["type"] == "test":
            continue
        actual = {name for _, name in target_dependencies(target)}
        if rows.get(target["name"]) != actual:
            wrong[target["name"]] = (sorted(rows.get(target["name"], set())), sorted(actual))
    assert not wrong, f"docs/architecture.md says (table, Package.swift): {wrong}"


# The modules of the server (everything a client of it does not need); "feeds" are those of the server's
# feed modules, "sockets" the modules that open sockets of their own.
SERVER = {"FeedStorage", "RedisFeedStore", "Redis", "CHiredis", "CSQLite", "CSystemShims", "HTTPCore",
          "EpollRuntime", "LogLines", "FeedCore", "FeedReplication", "Presence", "ViewModelHosting", "HTTPAPI", "FeedServer",
          "DiffStreamServer", "DiffStreamRedis", "DiffStreamExamples", "DiffStreamTesting"}
FEEDS = {"FeedStorage", "RedisFeedStore", "FeedCore", "FeedReplication", "Presence", "ViewModelHosting", "HTTPAPI",
         "FeedServer", "DiffStreamServer", "DiffStreamRedis", "DiffStreamExamples", "DiffStreamTesting"}
SOCKETS = {"EpollRuntime", "CSystemShims", "TLSStreamClient", "Redis", "CHiredis"}
# Each term the "knows nothing of" column may use, and the modules it stands for.
TERMS = {
    "JSON": {"DiffStreamJSON", "JSONEscaping"},
    "HTTP": {"HTTPCore", "HTTPAPI", "EpollRuntime"},
    "HTTP routing": {"HTTPAPI"},
    "Foundation": {"Foundation", "FoundationEssentials", "FoundationNetworking"},
    "snapshots": {"DiffStream"},
    "feeds": FEEDS,
    "a feed's logic": {"FeedCore", "FeedReplication"},
    "sockets": SOCKETS,
    "sockets of its own": SOCKETS | {"Glibc", "Musl", "Darwin"},
    "epoll": {"EpollRuntime", "CSystemShims"},
    "Redis": {"Redis", "RedisFeedStore", "CHiredis", "DiffStreamRedis"},
    "the examples' view models": {"DiffStreamExamples"},
    "the log handler": {"LogLines"},
    "the server": SERVER,
    "the client (FoundationNetworking)": {"DiffStreamClient", "TLSStreamClient", "FoundationNetworking"},
}
# The toolchain's and the system's modules, which "everything else" does not count.
SYSTEM = {"Swift", "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Glibc", "Musl",
          "Darwin", "Synchronization", "UIKit", "AppKit", "_Concurrency", "Observation"}
IMPORT = re.compile(r"^\s*(@_exported\s+)?(?:@\w+(?:\([^)]*\))?\s+)*"
                    r"(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
                    r"(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?(\w+)", re.M)


def imports(target):
    """(every module the target's sources import, the modules they re-export with `@_exported`)."""
    named, exported = set(), set()
    for path in swift_sources(target):
        for match in IMPORT.finditer(path.read_text()):
            named.add(match.group(2))
            if match.group(1):
                exported.add(match.group(2))
    return named, exported


def visible(package):
    """{module: every module its sources can name}: what they import, and what that re-exports, in turn."""
    found = {target["name"]: imports(target) for target in package["targets"] if target["type"] != "test"}
    result = {}
    for name, (named, _) in found.items():
        seen, pending = set(), list(named)
        while pending:
            module = pending.pop()
            if module in seen:
                continue
            seen.add(module)
            pending.extend(found.get(module, (set(), set()))[1])
        result[name] = seen
    return result


def test_the_glossary_knows_every_term_of_the_table():
    unknown = {name: [term for term in terms if term not in TERMS and term != "everything else"]
               for name, (_, terms) in rows().items()}
    unknown = {name: terms for name, terms in unknown.items() if terms}
    assert not unknown, f"terms of the 'knows nothing of' column this test cannot check (add them to TERMS): {unknown}"


def test_the_visible_modules_are_read_from_the_sources(package):
    # The reading itself: a direct import, a re-export one and two deep, and a module that imports nothing.
    seen = visible(package)
    assert "ServerSentEvents" in seen["FeedCore"] and "HTTPCore" not in seen["FeedCore"]
    assert "ServerSentEvents" in seen["EpollRuntime"]
    assert {"HTTPAPI", "ViewModelHosting", "FeedCore"} <= seen["DiffStreamRedis"]  # through DiffStreamServer's re-exports
    assert seen["JSONEscaping"] == set()


def test_no_module_imports_what_its_row_says_it_knows_nothing_of(package):
    seen = visible(package)
    wrong = {}
    for name, (dependencies, terms) in rows().items():
        for term in terms:
            if term == "everything else":
                forbidden = {module for module in seen[name] if module not in SYSTEM} - dependencies
            else:
                forbidden = seen[name] & TERMS.get(term, set())
            forbidden.discard(name)
            if forbidden:
                wrong.setdefault(name, []).append(f"{term}: {sorted(forbidden)}")
    assert not wrong, f"docs/architecture.md says these modules know nothing of what their sources import: {wrong}"
