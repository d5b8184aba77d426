"""Docs that compile (issue 50): every ```swift block of README.md, docs/view-models.md and
docs/client-swift.md is compiled, or says why not.

Each block is preceded by a marker line, invisible in the rendered page:

- `<!-- snippet: Target/File.swift -->`: the block is in Examples/DocSnippets/Sources/Target/File.swift,
  verbatim (whole lines, byte for byte). The file may hold several blocks and the support code they take
  for granted (the app's own types and functions, a function around a block of statements), commented
  as such; a file that holds no block is called Support.swift, or belongs to a stand-in module (UIKit on
  Linux). scripts/test.sh and checks/e2e/test_embedding.py build the package with warnings as errors.
- `<!-- snippet: skip (why) -->`: not Swift that compiles on its own (lines of a Package.swift), with
  the reason.

So a block changed in a document and not in the package (or the other way round), or a block without a
marker, fails here; a block the library no longer compiles fails the package's build.
"""
import difflib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "docs/view-models.md", "docs/client-swift.md"]
PACKAGE = ROOT / "Examples" / "DocSnippets"
SOURCES = PACKAGE / "Sources"
STAND_INS = {"UIKit"}  # modules that stand in for an Apple framework on Linux: no snippet in them
MARKER = re.compile(r"<!-- snippet: (?:skip \((?P<why>[^)]+)\)|(?P<file>[A-Za-z]+/[A-Za-z]+\.swift)) -->")


def swift_blocks(document):
    """(document, line, marker line, code) for each ```swift block; code with its final newline."""
    lines = (ROOT / document).read_text().splitlines(keepends=True)
    blocks = []
    for index, line in enumerate(lines):
        if line.strip().lower().startswith("```swift"):
            assert line == "```swift\n", f"{document}:{index + 1}: a swift block opens with exactly ```swift: {line!r}"
            end = next(k for k in range(index + 1, len(lines)) if lines[k].startswith("```"))
            blocks.append((document, index + 1, lines[index - 1].strip() if index else "", "".join(lines[index + 1:end])))
    return blocks


def all_blocks():
    return [block for document in DOCUMENTS for block in swift_blocks(document)]


def contains_lines(text, code):
    """Whether `code` (whole lines) is in `text`, starting at the beginning of a line."""
    return text.startswith(code) or ("\n" + code) in text


def test_the_documents_have_swift_blocks():
    counts = {document: len(swift_blocks(document)) for document in DOCUMENTS}
    assert all(counts.values()), counts


def test_every_swift_block_is_marked_built_or_skipped():
    unmarked = [f"{document}:{line}" for document, line, marker, _ in all_blocks() if not MARKER.fullmatch(marker)]
    assert not unmarked, ("swift blocks without a `<!-- snippet: Target/File.swift -->` or `<!-- snippet: skip (why) -->` "
                          f"line right before them: {unmarked}")


def test_every_built_block_is_in_its_file_verbatim():
    problems = []
    for document, line, marker, code in all_blocks():
        match = MARKER.fullmatch(marker)
        if not match or not match.group("file"):
            continue
        path = SOURCES / match.group("file")
        if not path.exists():
            problems.append(f"{document}:{line}: {path.relative_to(ROOT)} does not exist")
            continue
        text = path.read_text()
        if not contains_lines(text, code):
            closest = max(range(len(text.splitlines()) or 1),
                          key=lambda start: difflib.SequenceMatcher(None, "".join(text.splitlines(keepends=True)[start:start + code.count("\n")]), code).ratio())
            region = text.splitlines(keepends=True)[closest:closest + code.count("\n")]
            diff = "".join(difflib.unified_diff(region, code.splitlines(keepends=True), str(path.relative_to(ROOT)), document))
            problems.append(f"{document}:{line}: the block is not in {path.relative_to(ROOT)} verbatim; copy it there:\n{diff}")
    assert not problems, "\n".join(problems)


def test_every_source_file_holds_a_block_or_supports_them():
    named = {MARKER.fullmatch(marker).group("file") for _, _, marker, _ in all_blocks()
             if MARKER.fullmatch(marker) and MARKER.fullmatch(marker).group("file")}
    files = {str(path.relative_to(SOURCES)) for path in SOURCES.rglob("*.swift")}
    strays = sorted(name for name in files - named
                    if Path(name).name != "Support.swift" and Path(name).parts[0] not in STAND_INS)
    assert not strays, f"files of Examples/DocSnippets that hold no block of the documents (name them Support.swift): {strays}"
    assert named <= files


def test_the_targets_are_the_folders():
    manifest = (PACKAGE / "Package.swift").read_text()
    targets = set(re.findall(r'\.(?:executableTarget|target)\(name: "([^"]+)"', manifest))
    assert targets == {path.name for path in SOURCES.iterdir() if path.is_dir()}, targets


def test_scripts_test_sh_builds_the_package_with_warnings_as_errors():
    script = (ROOT / "scripts" / "test.sh").read_text()
    build = re.search(r"^doc_snippets_build=\((.*)\)$", script, re.M)
    assert build and "--package-path Examples/DocSnippets" in build.group(1) and "-warnings-as-errors" in build.group(1), build
    assert '"${doc_snippets_build[@]}"' in script and "${doc_snippets_build[*]}" in script  # step 6, and in the background
