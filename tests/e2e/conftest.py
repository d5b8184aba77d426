"""End-to-end fixtures: the real binary on an ephemeral port, raw sockets, an SSE reader."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import ROOT, Server, free_port, wait_for  # noqa: E402,F401


@pytest.fixture
def start(request, tmp_path):
    """A factory: start(extra flags...) -> Server; every server is checked alive at the end, then stopped."""
    servers = []

    def make(*extra, **options):
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in request.node.name)[:80]
        options.setdefault("name", f"{safe}-{len(servers)}")
        server = Server(extra=extra, **options)
        servers.append(server)
        return server

    yield make
    for server in servers:
        survived = server.alive() or server.process.returncode == 0
        server.stop()
        assert survived, f"the server died:\n{''.join(server.log[-30:])}"


@pytest.fixture
def server(start):
    return start()
