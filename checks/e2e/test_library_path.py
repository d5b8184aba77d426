"""The browser library served by every server from the binary, at a path that carries its version
(issue 37): `/_diffstream/<version>/<module>` cached for a year, `/_diffstream/current/<module>` a redirect
there; and the demo page served from the binary when there is no Public folder."""
import gzip
import http.client
import re
import subprocess

import pytest

from conftest import ARTIFACTS, log_name
from e2e_helpers import BINARY, ROOT, clean_environment, free_port, wait_until

LIBRARY = [
    "diffstream.js", "diffstream-connection.js", "diffstream-patch.js", "diffstream-bindings.js", "diffstream-keyed.js",
    "diffstream-animate.js", "diffstream-actions.js", "diffstream-protocol.js", "diffstream-streams.js",
    "diffstream-transports.js", "diffstream-util.js", "stream-hub.js", "stream-feed.js", "stream-source.js",
    "stream-limits.js", "stream-worker.js", "diffstream-poll.js", "stream-poll.js",
]


def versioned(server, module="diffstream.js"):
    reply = server.http("GET", f"/_diffstream/current/{module}")
    assert reply.status == 302 and reply.headers["Cache-Control"] == "no-cache", reply
    location = reply.headers["Location"]
    assert re.fullmatch(rf"/_diffstream/[0-9a-f]{{12}}/{re.escape(module)}", location), location
    return location


@pytest.mark.parametrize("module", LIBRARY)
def test_every_module_is_served_at_its_versioned_path(start, tmp_path, module):
    server = start(public=tmp_path)  # a page directory without the library in it
    path = versioned(server, module)
    reply = server.http("GET", path)
    assert reply.status == 200 and reply.body == (ROOT / "Public" / module).read_bytes()
    assert reply.headers["Content-Type"].startswith("text/javascript") or reply.headers["Content-Type"].startswith("application/javascript")
    assert reply.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert reply.headers["Access-Control-Allow-Origin"] == "*"
    again = server.http("GET", path, headers={"If-None-Match": reply.headers["ETag"]})
    assert again.status == 304 and again.body == b""


def test_the_gzipped_module_has_its_own_tag(start, tmp_path):
    server = start(public=tmp_path)
    path = versioned(server)
    plain = server.http("GET", path)
    zipped = server.http("GET", path, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip" and gzip.decompress(zipped.body) == plain.body
    assert zipped.headers["ETag"] == plain.headers["ETag"][:-1] + '-gz"'


def test_only_the_library_is_under_the_path(start, tmp_path):
    server = start(public=tmp_path)
    base = versioned(server).rsplit("/", 1)[0]
    for name in ["index.html", "app.js", "nope.js", ""]:
        assert server.http("GET", f"{base}/{name}").status == 404, name
    assert server.http("GET", "/_diffstream/current/app.js").status == 404
    assert server.http("GET", "/_diffstream/000000000000/diffstream.js").status == 404


def test_without_a_public_folder_the_binary_serves_the_demo_page(tmp_path, request):
    """Started from a folder with no Public and no --public: the page built into the binary."""
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / f"{log_name(request.node)}.log", "w")
    process = subprocess.Popen([str(BINARY), "--port", str(port), "--data", "none"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=log, env=clean_environment())
    try:
        def get(path):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                connection.request("GET", path)
                reply = connection.getresponse()
                return reply.status, reply.read()
            except OSError:
                return None, b""
            finally:
                connection.close()
        wait_until(lambda: get("/healthz")[0] == 200, timeout=20, message="the server to answer")
        for path, file in [("/", "index.html"), ("/app.js", "app.js"), ("/style.css", "style.css"), ("/diffstream.js", "diffstream.js")]:
            status, body = get(path)
            assert status == 200 and body == (ROOT / "Public" / file).read_bytes(), path
        assert get("/_diffstream/current/diffstream.js")[0] == 302
    finally:
        process.terminate()
        assert process.wait(20) == 0
