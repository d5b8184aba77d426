"""The README stays short and true (issue 37): at most about 250 lines, every section it moved linked,
and the packages it says the scripts install are the ones scripts/setup.sh installs. (Its curl examples
run against the binary in checks/e2e/test_readme.py.)"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_the_readme_is_short():
    """Lines a reader sees: the `<!-- snippet: … -->` markers before its swift blocks (checks/structure/test_doc_snippets.py)
    are not shown."""
    shown = [line for line in README.splitlines() if not re.fullmatch(r"<!-- snippet: .* -->", line)]
    assert len(shown) <= 250, len(shown)


def test_every_linked_document_exists():
    for target in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / target).exists(), target


def test_the_moved_reference_is_linked():
    for document in ["docs/configuration.md", "docs/operations.md", "docs/deploy-redis.md", "docs/security.md", "docs/view-models.md"]:
        assert f"]({document})" in README, document


def test_the_package_list_is_what_setup_installs():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    packages = set()
    for line in re.findall(r"^\s*(?:packages|python_packages)(?:\+)?=\((.*?)\)", setup, re.M):
        packages.update(line.split())
    listed = set(re.findall(r"`([a-z0-9][a-z0-9.+-]*)`", README[:README.index("## Try it with curl")]))
    assert packages <= listed, f"setup.sh installs what the README does not name: {sorted(packages - listed)}"


def test_the_package_swift_snippet_is_the_examples():
    """The README's Package.swift snippet for a program of one's own is Examples/Scoreboard's, line for line."""
    start = README.index("Its `Package.swift` depends on DiffStream")
    snippet = README[README.index("```swift\n", start) + 9:]
    snippet = snippet[:snippet.index("```")]
    manifest = [line.strip() for line in (ROOT / "Examples" / "Scoreboard" / "Package.swift").read_text().splitlines()]
    for line in snippet.splitlines():
        if line.strip() and line.strip() not in ("],", "]"):
            assert line.strip() in manifest, line
