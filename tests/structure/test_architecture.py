"""docs/architecture.md opens with every module, its one job and its dependencies, drawn from
Package.swift (issue 36): this checks the table against `swift package dump-package`, so it cannot
drift from the package."""
import re

import pytest

from test_platforms import ROOT, dump_package, target_dependencies


@pytest.fixture(scope="module")
def package():
    return dump_package()


def table():
    """{module: set of dependencies} from the first table of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("| module | its one job | depends on |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        names = re.findall(r"`([\w-]+)`", cells[0])
        dependencies = set() if cells[2] in ("—", "") else {name.strip() for name in cells[2].split(",")}
        for name in names:
            rows[name] = dependencies
    return rows


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
