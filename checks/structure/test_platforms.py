"""The package's platform statement, checked where no Apple SDK is (issue 35).

Package.swift declares Apple platforms for the client products only; the server products are Linux-only
(epoll). There is no Apple SDK on Linux to build the client for `-target arm64-apple-ios15.0`, so this
checks the client's sources instead:

- the client products' dependency closure (read from `swift package dump-package`) holds only the client
  targets, no system library and no other package;
- those sources import only what the declared systems have (Foundation, Dispatch, the C library and
  UIKit/AppKit behind `#if canImport`), never `Synchronization` (macOS 15, iOS 18);
- they use none of the standard library's or Foundation's APIs that are newer than the declared minimums
  (a table below) unless behind `if #available`;
- every server product is said to be Linux-only in Package.swift and the README, and the epoll runtime
  stops a build elsewhere with one clear `#error`.
"""
import json
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLIENT_PRODUCTS = {"DiffStream", "DiffStreamJSON", "DiffStreamClient"}
# Modules a client source may import (unconditionally); the C library and UI frameworks only inside `#if`.
ALLOWED_IMPORTS = {"Foundation", "Dispatch"}
GUARDED_IMPORTS = {"Glibc", "Musl", "Darwin", "FoundationNetworking", "UIKit", "AppKit"}
# APIs newer than the declared minimums (macOS 14, iOS 15, tvOS 15, watchOS 8): the pattern, and the
# first releases that have it.
NEWER_APIS = {
    r"\bimport\s+Synchronization\b": "Synchronization: macOS 15, iOS 18",
    r"\bMutex<": "Mutex: macOS 15, iOS 18",
    r"\bAtomic<": "Atomic: macOS 15, iOS 18",
    r"String\(validating:": "String(validating:as:): macOS 15, iOS 18",
    r"\bInlineArray\b": "InlineArray: macOS 26, iOS 26",
    r"\bContinuousClock\b": "ContinuousClock: macOS 13, iOS 16",
    r"\bSuspendingClock\b": "SuspendingClock: macOS 13, iOS 16",
    r"\bDuration\b": "Duration: macOS 13, iOS 16",
    r"\.sleep\(for:": "Task.sleep(for:): macOS 13, iOS 16",
    r"\bRegex\b|#/": "Regex: macOS 13, iOS 16",
    r"URL\(filePath:|\.appending\(path:": "URL(filePath:)/appending(path:): macOS 13, iOS 16",
}


def dump_package():
    output = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(output)


@pytest.fixture(scope="module")
def package():
    return dump_package()


def target_dependencies(target):
    """(kind, name) of each dependency: ("target", name) or ("product", name) of another package."""
    found = []
    for dependency in target["dependencies"]:
        if "byName" in dependency:
            found.append(("target", dependency["byName"][0]))
        elif "target" in dependency:
            found.append(("target", dependency["target"][0]))
        elif "product" in dependency:
            found.append(("product", dependency["product"][0]))
    return found


def closure(package, product_names):
    targets = {target["name"]: target for target in package["targets"]}
    products = {product["name"]: product for product in package["products"]}
    pending = [name for product in product_names for name in products[product]["targets"]]
    seen, foreign = set(), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        if name not in targets:
            foreign.add(name)
            continue
        seen.add(name)
        for kind, dependency in target_dependencies(targets[name]):
            if kind == "product" and dependency not in products:
                foreign.add(dependency)
            else:
                pending.append(dependency)
    return seen, foreign, targets


def swift_sources(target):
    path = ROOT / (target.get("path") or f"Sources/{target['name']}")
    return sorted(path.rglob("*.swift"))


def test_the_client_closure_holds_only_client_targets(package):
    names, foreign, targets = closure(package, CLIENT_PRODUCTS)
    assert names == {"DiffStream", "DiffStreamJSON", "JSONEscaping", "Timekeeping", "DiffStreamClient"}, names
    assert not foreign, f"the client products depend on other packages: {foreign}"
    assert all(targets[name]["type"] == "regular" for name in names), "no system library in the client"


def test_the_declared_platforms_are_the_clients(package):
    declared = {platform["platformName"]: platform["version"] for platform in package["platforms"]}
    assert declared == {"macos": "14.0", "ios": "15.0", "tvos": "15.0", "watchos": "8.0", "maccatalyst": "15.0"}, declared


def guarded(lines, index):
    """Whether line `index` sits inside an `#if` (any depth)."""
    depth = 0
    for line in lines[:index]:
        stripped = line.strip()
        if stripped.startswith("#if"):
            depth += 1
        elif stripped.startswith("#endif"):
            depth -= 1
    return depth > 0


def inside_available_check(lines, index):
    """Whether line `index` follows an `if #available(` that opened a block it is still in."""
    for back in range(index - 1, max(-1, index - 6), -1):
        if "#available(" in lines[back]:
            return True
    return False


def client_sources(package):
    names, _, targets = closure(package, CLIENT_PRODUCTS)
    own = set(names)
    for name in sorted(names):
        for source in swift_sources(targets[name]):
            yield own, source


def test_client_sources_import_only_what_the_declared_systems_have(package):
    problems = []
    for own, source in client_sources(package):
        lines = source.read_text().splitlines()
        for index, line in enumerate(lines):
            match = re.match(r"\s*(?:@\w+\s+)*import\s+(?:\w+\s+)?([\w.]+)", line)
            if not match:
                continue
            module = match.group(1).split(".")[0]
            if module in own or module in ALLOWED_IMPORTS:
                continue
            if module in GUARDED_IMPORTS and guarded(lines, index):
                continue
            problems.append(f"{source.relative_to(ROOT)}:{index + 1}: import {module}")
    assert not problems, "\n".join(problems)


def test_client_sources_use_no_api_newer_than_declared(package):
    problems = []
    for _, source in client_sources(package):
        lines = source.read_text().splitlines()
        for index, line in enumerate(lines):
            code = line.split("//")[0]
            for pattern, why in NEWER_APIS.items():
                if re.search(pattern, code) and not inside_available_check(lines, index):
                    problems.append(f"{source.relative_to(ROOT)}:{index + 1}: {why}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("api, line", [("Mutex<Int>", "let lock = Mutex<Int>(0)"), ("String(validating:", "String(validating: b, as: UTF8.self)"),
                                       ("Synchronization", "import Synchronization")])
def test_the_table_catches_what_it_names(api, line):
    assert any(re.search(pattern, line) for pattern in NEWER_APIS), api


def test_server_products_are_said_to_be_linux_only(package):
    manifest = (ROOT / "Package.swift").read_text()
    readme = (ROOT / "README.md").read_text()
    server = sorted(product["name"] for product in package["products"] if product["name"] not in CLIENT_PRODUCTS)
    assert "Linux-only" in manifest and "Linux-only" in readme
    for name in server:
        assert re.search(rf"\b{name}\b", manifest.split("platforms:")[0]), f"Package.swift's platform note does not name {name}"
    runtime = (ROOT / "Sources" / "EpollRuntime" / "Platform.swift").read_text()
    assert "#if !os(Linux)" in runtime and "#error(" in runtime
