"""The browser library's shape (Public/, issue 36): one job per file, and what the binary embeds.

- every file of Public/ is at most 600 lines, and one over 500 says why in its first lines
  (`... is long because ...`), as the generated Sources/DiffStreamServer/PublicFiles.swift does;
- the library that scripts/embed-public.py embeds (`LIBRARY`, served at /_diffstream/<version>/) is exactly
  what diffstream.js imports, directly or not, with the worker it starts and what that imports: a module
  left out would fail to load from the binary, one too many would be served for nothing;
- PublicFiles.swift is what Public/ makes (`embed-public.py --check`; PublicFilesTests checks it in Swift).
"""
import importlib.util
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PUBLIC = ROOT / "Public"
# `import … from './x.js'`, `export … from './x.js'`, and `new URL('./x.js', import.meta.url)` (the worker).
REFERENCE = re.compile(r"""(?:\bfrom\s+|new\s+URL\(\s*)['"]\./([\w.-]+\.js)['"]""")


def embed_script():
    spec = importlib.util.spec_from_file_location("embed_public", ROOT / "scripts" / "embed-public.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def long_reason(path, limit=12):
    head = path.read_text().splitlines()[:limit]
    return any("is long because" in line for line in head)


def test_every_public_file_is_at_most_600_lines_and_a_long_one_says_why():
    for path in sorted(PUBLIC.iterdir()):
        lines = len(path.read_text().splitlines())
        assert lines <= 600, f"{path.name} has {lines} lines: split it by job"
        if lines > 500:
            assert long_reason(path), f"{path.name} has {lines} lines and does not say why (`is long because`)"


def test_the_generated_public_files_say_why_they_are_long():
    assert long_reason(ROOT / "Sources" / "DiffStreamServer" / "PublicFiles.swift")


def test_the_embedded_library_is_what_diffstream_js_imports():
    library = embed_script().LIBRARY
    assert library[0] == "diffstream.js" and len(set(library)) == len(library), library
    found, pending = set(), ["diffstream.js"]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        path = PUBLIC / name
        assert path.is_file(), f"a module imports ./{name}, which Public/ lacks"
        found.add(name)
        pending.extend(REFERENCE.findall(path.read_text()))
    assert "stream-worker.js" in found, "diffstream.js no longer starts the shared worker?"
    assert set(library) == found, f"embed-public.py's LIBRARY lacks {sorted(found - set(library))}, has too many {sorted(set(library) - found)}"


def test_the_demo_page_imports_only_files_of_public():
    for name in ["app.js", "demo-looks.js", "dashboard.html", "index.html"]:
        for imported in REFERENCE.findall((PUBLIC / name).read_text()):
            assert (PUBLIC / imported).is_file(), f"{name} imports ./{imported}, which Public/ lacks"


def test_public_files_swift_is_what_public_makes():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "embed-public.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
