"""A clone stands alone (issue 50): no test, script or benchmark reads a file outside the checkout.

A user's, a packager's or a fork's clone has nothing beside it, so every file a test reads lives in the
repository (checks/fixtures/, see its README). This test reads the sources for the ways they find files
and resolves each relative path against the file that names it:

- the project's shared folder beside the checkout named at all (its parent path, its `vectors/` …);
- Swift: `URL(fileURLWithPath: #filePath)` with its `.deletingLastPathComponent()` steps and
  `.appendingPathComponent("…")`;
- JavaScript: `new URL('…', import.meta.url)` and the tests' `here('…')`;
- Python: `Path(__file__).resolve().parents[N]` and `.parent` chains, then `/ "…"` segments;
- shell: `"$(dirname "$0")/…"`.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ["Tests", "checks", "scripts", ".ci", "Benchmarks", "Fuzz", "Examples", "Sources"]
THIS = Path(__file__).resolve()  # its own examples below name paths outside on purpose
OUTSIDE = "shared"  # the folder beside the checkout; spelled once, so that this file does not name it as a path
SHARED = re.compile(rf"\.\./{OUTSIDE}\b|\b{OUTSIDE}/(?:vectors|hooks|design)\b")


def files(*suffixes):
    for folder in FOLDERS:
        base = ROOT / folder
        if not base.exists():
            continue
        for path in sorted(base.rglob("*")):
            if ".build" in path.parts or "__pycache__" in path.parts or not path.is_file() or path == THIS:
                continue
            if not suffixes or path.suffix in suffixes or (path.suffix == "" and "" in suffixes):
                yield path


def inside(path: Path) -> bool:
    resolved = path.resolve()
    return resolved == ROOT or ROOT in resolved.parents


def swift_reads(path: Path, text: str):
    """Each path a `#filePath` chain names, resolved."""
    pattern = re.compile(
        r'URL\(fileURLWithPath:\s*#filePath\)(?:\s*//[^\n]*)?((?:\s*\.deletingLastPathComponent\(\))*)'
        r'(?:\s*\.appendingPathComponent\("([^"]*)"\))?')
    for match in pattern.finditer(text):
        target = path
        for _ in range(match.group(1).count("deletingLastPathComponent")):
            target = target.parent
        yield target / (match.group(2) or "")


def javascript_reads(path: Path, text: str):
    for match in re.finditer(r"""(?:new URL|\bhere)\(\s*['"](\.{1,2}/[^'"]*)['"]""", text):
        yield path.parent / match.group(1)


def python_reads(path: Path, text: str):
    pattern = re.compile(
        r'Path\(__file__\)(?:\.resolve\(\))?((?:\.parent(?!s))*)(?:\.parents\[(\d+)\])?((?:\s*/\s*"[^"]*")*)')
    for match in pattern.finditer(text):
        target = path
        for _ in range(match.group(1).count(".parent")):
            target = target.parent
        if match.group(2) is not None:
            target = target.parents[int(match.group(2))]
        for segment in re.findall(r'"([^"]*)"', match.group(3) or ""):
            target = target / segment
        yield target


def shell_reads(path: Path, text: str):
    for match in re.finditer(r'\$\(dirname "\$0"\)((?:/[\w.-]+)*)', text):
        yield path.parent / match.group(1).lstrip("/")


READERS = {".swift": swift_reads, ".js": javascript_reads, ".mjs": javascript_reads, ".py": python_reads,
           ".sh": shell_reads, "": shell_reads}


def test_nothing_names_the_shared_folder():
    named = [f"{path.relative_to(ROOT)}:{number}" for path in files()
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1) if SHARED.search(line)]
    assert named == [], "copy what these read into the repository (checks/fixtures/): " + ", ".join(named)


def test_every_relative_path_stays_in_the_checkout():
    outside = []
    for path in files(*READERS):
        text = path.read_text(errors="replace")
        for target in READERS[path.suffix](path, text):
            if not inside(target):
                outside.append(f"{path.relative_to(ROOT)} reads {target.resolve()}")
    assert outside == []


@pytest.mark.parametrize("reader,source,expected_inside", [
    (swift_reads, 'URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()'
                  '.deletingLastPathComponent().appendingPathComponent("checks/fixtures/x")', True),
    (swift_reads, 'URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()'
                  '.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("elsewhere/x")', False),
    (javascript_reads, "here('../fixtures/diff-cases.jsonl')", True),
    (javascript_reads, "here('../../../elsewhere/diff-cases.jsonl')", False),
    (python_reads, 'Path(__file__).resolve().parents[2] / "checks"', True),
    (python_reads, 'Path(__file__).resolve().parents[3] / "elsewhere"', False),
    (shell_reads, 'cd "$(dirname "$0")/.."', True),
    (shell_reads, 'cat "$(dirname "$0")/../../../elsewhere/x"', False),
])
def test_the_readers_tell_inside_from_outside(reader, source, expected_inside):
    """The check itself can fail: a path that leaves the checkout is seen (a file two folders down)."""
    here = ROOT / "Tests" / "TestSupport" / "Example.swift"
    targets = list(reader(here, source))
    assert targets, source
    assert all(inside(target) for target in targets) == expected_inside
