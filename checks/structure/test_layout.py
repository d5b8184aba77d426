"""The top level of the checkout (issue 53, item 4): the shape the user fixed (Package.swift, Sources, Tests,
Public and Dockerfile), and no two names that differ only by case, which a Mac's default case-insensitive
disk would make one (`Tests/`, the Swift test targets, and `checks/`, the end-to-end, browser and structure
tests with their fixtures)."""
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def top_level_names():
    """Every top-level name git tracks (what a clone holds), files and folders."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    return {path.split("/", 1)[0] for path in listed}


def test_the_fixed_shape_is_at_the_top_level():
    names = top_level_names()
    missing = [name for name in ("Package.swift", "Sources", "Tests", "Public", "Dockerfile") if name not in names]
    assert missing == [], f"missing at the top level: {missing}"


def test_no_two_top_level_names_differ_only_by_case():
    by_folded = defaultdict(list)
    for name in top_level_names():
        by_folded[name.casefold()].append(name)
    clashes = sorted(sorted(names) for names in by_folded.values() if len(names) > 1)
    assert clashes == [], f"names that one case-insensitive disk makes one: {clashes}"
