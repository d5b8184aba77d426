"""Static files: types, ETags, gzip variants, and no way out of the root."""
import os

import pytest

from e2e_helpers import raw


@pytest.fixture
def site(tmp_path, start):
    root = tmp_path / "public"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<!doctype html><html><body>" + "hello " * 400 + "</body></html>")
    (root / "app.js").write_text("console.log('hi');")
    (root / "style.css").write_text("body{}" * 300)
    (root / "sub" / "index.html").write_text("<html>sub</html>")
    (root / ".secret").write_text("HIDDEN-CONTENT")
    (tmp_path / "outside.txt").write_text("OUTSIDE-CONTENT")
    os.symlink(tmp_path / "outside.txt", root / "escape.txt")
    os.symlink(root / "app.js", root / "alias.js")
    return start(public=root)


@pytest.mark.parametrize("path,type_", [("/", "text/html"), ("/index.html", "text/html"), ("/app.js", "application/javascript"),
                                        ("/style.css", "text/css"), ("/sub/", "text/html"), ("/alias.js", "application/javascript")])
def test_files_with_their_types(site, path, type_):
    status, headers, _ = site.call("GET", path)
    assert status == 200 and headers["Content-Type"].startswith(type_)
    assert headers["ETag"] and headers["Cache-Control"]


def test_etag_revalidation_and_gzip_variants(site):
    _, plain, body = site.call("GET", "/index.html", headers={"Accept-Encoding": "identity"})
    assert plain["Content-Encoding"] is None and b"hello" in body
    _, gz, _ = site.call("GET", "/index.html", headers={"Accept-Encoding": "gzip"})
    assert gz["Content-Encoding"] == "gzip" and gz["ETag"] != plain["ETag"] and "Accept-Encoding" in gz["Vary"]
    assert site.call("GET", "/index.html", headers={"If-None-Match": plain["ETag"]})[0] == 304
    assert site.call("GET", "/index.html", headers={"If-None-Match": gz["ETag"], "Accept-Encoding": "gzip"})[0] == 304
    assert site.call("GET", "/index.html", headers={"If-None-Match": '"other"'})[0] == 200
    _, tiny, _ = site.call("GET", "/app.js", headers={"Accept-Encoding": "gzip"})
    assert tiny["Content-Encoding"] is None  # tiny bodies stay plain


@pytest.mark.parametrize("target", [b"/../outside.txt", b"/%2e%2e/outside.txt", b"/sub/..%2f..%2foutside.txt", b"/sub%2f..%2findex.html",
                                    b"/app.js%00.html", b"/.secret", b"/escape.txt", b"/sub/../../outside.txt", b"/..\\outside.txt",
                                    b"/%5c..%5coutside.txt", b"/%2E%2E/%2E%2E/etc/passwd", b"//etc/passwd"])
def test_no_way_out_of_the_root(site, target):
    response = raw(site, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 404") or response.startswith(b"HTTP/1.1 400"), response[:60]
    assert b"OUTSIDE-CONTENT" not in response and b"HIDDEN-CONTENT" not in response
