"""Runs the page's StreamHub unit and property-based tests (stream_hub*.test.js) under Node: no browser
and no server. STREAM_HUB_SEED changes the property test's first seed."""
import pathlib
import subprocess


def test_stream_hub_unit_tests_pass():
    here = pathlib.Path(__file__).resolve().parent
    files = [str(here / "stream_hub.test.js"), str(here / "stream_hub_property.test.js")]
    result = subprocess.run(["node", "--test", *files], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout, result.stdout
