"""The package's modules, read from `swift package dump-package` and the sources (issue 36).

- no module shares its name with a type declared in it (a deprecated alias aside), so a qualified name
  such as `DiffStreamServer.Server` never needs explaining;
- the hosting product (`DiffStreamServer`) links neither the example view models nor hiredis: Redis is
  the product `DiffStreamRedis`, the examples are `DiffStreamExamples`, both linked by the executable;
- the graph runs one way: the diff library knows nothing of HTTP, the pure HTTP layer nothing of epoll.
"""
import re

import pytest

from test_platforms import ROOT, closure, dump_package, swift_sources

DECLARATION = re.compile(r"^\s*(?:@[\w()*, :\"]+\s+)*(?:(?:public|package|internal|fileprivate|private|final|indirect|nonisolated)\s+)*"
                         r"(class|struct|enum|actor|protocol|typealias)\s+(\w+)")


@pytest.fixture(scope="module")
def package():
    return dump_package()


def declarations(target):
    """(kind, name, deprecated) of every type a target's sources declare."""
    found = []
    for path in swift_sources(target):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            match = DECLARATION.match(line)
            if match:
                before = "\n".join(lines[max(0, index - 3):index + 1])
                found.append((match.group(1), match.group(2), "deprecated" in before))
    return found


def test_no_module_is_named_like_a_type_in_it(package):
    clashes = []
    for target in package["targets"]:
        if target["type"] not in ("regular", "executable"):
            continue
        for kind, name, deprecated in declarations(target):
            if name == target["name"] and not (kind == "typealias" and deprecated):
                clashes.append(f"{target['name']}: {kind} {name}")
    assert not clashes, f"modules named like a type they declare: {clashes}"


def test_the_server_type_keeps_its_old_name_as_a_deprecated_alias(package):
    server = next(target for target in package["targets"] if target["name"] == "DiffStreamServer")
    assert ("typealias", "DiffStreamServer", True) in declarations(server)
    assert any(kind == "class" and name == "Server" for kind, name, _ in declarations(server))


def test_the_hosting_library_links_neither_the_examples_nor_redis(package):
    names, foreign, _ = closure(package, ["DiffStreamServer"])
    assert not names & {"DiffStreamExamples", "Redis", "RedisFeedStore", "CHiredis", "DiffStreamRedis"}, sorted(names)
    for name in names:
        for path in swift_sources(next(t for t in package["targets"] if t["name"] == name)):
            assert not re.search(r"^import (Redis|RedisFeedStore|DiffStreamExamples)$", path.read_text(), re.M), path


def test_redis_and_the_examples_are_products_the_executable_links(package):
    products = {product["name"]: product["targets"] for product in package["products"]}
    assert products["DiffStreamRedis"] == ["DiffStreamRedis"]
    assert products["DiffStreamExamples"] == ["DiffStreamExamples"]
    names, _, _ = closure(package, ["diffstream"])
    assert {"DiffStreamRedis", "DiffStreamExamples", "CHiredis"} <= names


@pytest.mark.parametrize("product, never", [
    ("DiffStream", {"HTTPCore", "EpollRuntime", "FeedServer"}),
    ("DiffStreamJSON", {"HTTPCore", "EpollRuntime", "FeedServer"}),
    ("HTTPCore", {"EpollRuntime", "CSystemShims", "FeedServer", "DiffStream"}),
    ("FeedServer", {"EpollRuntime", "CSystemShims", "Redis", "CHiredis"}),
])
def test_the_graph_runs_one_way(package, product, never):
    names, _, _ = closure(package, [product])
    assert not names & never, f"{product} depends on {sorted(names & never)}"


def test_no_source_file_is_long_without_saying_why():
    """Files with one job: none over 600 lines unless its first lines say why one job needs the length
    (`... is long because ...`); the browser library's files are checked by test_public_modules.py."""
    long = []
    for path in sorted((ROOT / "Sources").rglob("*.swift")):
        lines = path.read_text().splitlines()
        if len(lines) > 600 and not any(re.search(r"\b(is|are) long because\b", line) for line in lines[:12]):
            long.append(f"{path.relative_to(ROOT)} ({len(lines)} lines)")
    assert not long, f"over 600 lines without a reason at the top: {long}"


def target_closure(package, target_names):
    """The targets `target_names` depend on, themselves included (targets that are not products too)."""
    from test_platforms import target_dependencies
    targets = {target["name"]: target for target in package["targets"]}
    pending, seen = list(target_names), set()
    while pending:
        name = pending.pop()
        if name in seen or name not in targets:
            continue
        seen.add(name)
        pending.extend(dependency for _, dependency in target_dependencies(targets[name]))
    return seen


REDIS_MODULES = {"Redis", "RedisFeedStore", "CHiredis", "DiffStreamRedis"}


def test_the_feed_core_never_mentions_redis(package):
    core = next(target for target in package["targets"] if target["name"] == "FeedCore")
    mentions = [f"{path.relative_to(ROOT)}:{number}" for path in swift_sources(core)
                for number, line in enumerate(path.read_text().splitlines(), 1) if re.search("redis", line, re.I)]
    assert not mentions, f"FeedCore mentions Redis: {mentions}"
    names = target_closure(package, ["FeedCore"])
    assert not names & REDIS_MODULES, f"FeedCore depends on {sorted(names & REDIS_MODULES)}"


def test_replication_is_a_module_of_its_own_that_knows_no_redis(package):
    names = target_closure(package, ["FeedReplication"])
    assert {"FeedCore", "FeedStorage"} <= names, sorted(names)
    assert not names & REDIS_MODULES, f"FeedReplication depends on {sorted(names & REDIS_MODULES)}"
