"""Runs the page's Node tests (checks/browser/*.test.mjs: the StreamHub's unit and property-based tests, the
protocol module on the diff vectors) under Node: no browser and no server. STREAM_HUB_SEED changes the
property test's first seed. scripts/test.sh runs them too."""
import pathlib
import subprocess


def test_node_tests_pass():
    here = pathlib.Path(__file__).resolve().parent
    files = sorted(str(p) for p in here.glob("*.test.mjs"))
    assert files
    result = subprocess.run(["node", "--test", *files], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout, result.stdout
