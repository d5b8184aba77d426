"""Static files from --public: types, ETags and 304, gzip variants, and no way out of the root."""
import gzip
import os

import pytest

from e2e_helpers import Conn, raw

INDEX = "<!doctype html><html><body>" + "hello " * 400 + "</body></html>"  # over 1 KiB
STYLE = "body{margin:0}\n" * 200


@pytest.fixture(scope="module")
def site_root(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("site")
    root = tmp_path / "public"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text(INDEX)
    (root / "app.js").write_text("console.log('hi');")  # tiny
    (root / "style.css").write_text(STYLE)
    (root / "data.json").write_text('{"a":1}')
    (root / "logo.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2000))
    (root / "blob.bin").write_bytes(bytes(range(256)) * 8)
    (root / "sub" / "index.html").write_text("<html>sub</html>")
    (root / "sub" / "page.txt").write_text("plain text")
    (root / ".secret").write_text("HIDDEN-CONTENT")
    (root / "sub" / ".env").write_text("HIDDEN-CONTENT")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("HIDDEN-CONTENT")
    (tmp_path / "outside.txt").write_text("OUTSIDE-CONTENT")
    (tmp_path / "outside-dir").mkdir()
    (tmp_path / "outside-dir" / "index.html").write_text("OUTSIDE-CONTENT")
    os.symlink(tmp_path / "outside.txt", root / "escape.txt")
    os.symlink(tmp_path / "outside-dir", root / "escape-dir")
    os.symlink("../outside.txt", root / "sub" / "relative-escape.txt")
    os.symlink(root / "app.js", root / "alias.js")  # a symlink that stays inside is fine
    return root


@pytest.fixture(scope="module")
def site(start_shared, site_root):
    return start_shared(public=site_root)


@pytest.mark.parametrize("path,content_type", [
    ("/", "text/html"), ("/index.html", "text/html"), ("/app.js", "application/javascript"), ("/style.css", "text/css"),
    ("/data.json", "application/json"), ("/logo.svg", "image/svg+xml"), ("/image.png", "image/png"),
    ("/blob.bin", "application/octet-stream"), ("/sub/", "text/html"), ("/sub/page.txt", "text/plain"),
    ("/alias.js", "application/javascript"), ("/index.html?v=3", "text/html"),
])
def test_files_are_served_with_their_type_etag_and_cache_control(site, path, content_type):
    reply = site.http("GET", path)
    assert reply.status == 200 and reply.headers["Content-Type"].startswith(content_type), (path, reply.headers)
    assert reply.headers["ETag"].startswith('"') and reply.headers["ETag"].endswith('"')
    assert reply.headers["Cache-Control"]
    assert int(reply.headers["Content-Length"]) == len(reply.body)


def test_root_serves_index_html(site):
    assert site.http("GET", "/").body.decode() == INDEX
    assert site.http("GET", "/sub/").body == b"<html>sub</html>"


def test_etag_revalidation(site):
    first = site.http("GET", "/style.css")
    etag = first.headers["ETag"]
    assert site.http("GET", "/style.css").headers["ETag"] == etag, "stable for the same content"
    for condition in [etag, f"W/{etag}", f'"other", {etag}', "*"]:
        reply = site.http("GET", "/style.css", headers={"If-None-Match": condition})
        assert reply.status == 304 and reply.body == b"" and reply.headers["ETag"] == etag, condition
    assert site.http("GET", "/style.css", headers={"If-None-Match": '"other"'}).status == 200
    assert site.http("GET", "/app.js", headers={"If-None-Match": etag}).status == 200, "another file's tag"


def test_a_changed_file_gets_a_new_etag(site, site_root):
    (site_root / "sub" / "edited.txt").write_text("first")
    before = site.http("GET", "/sub/edited.txt")
    (site_root / "sub" / "edited.txt").write_text("second, longer")
    after = site.http("GET", "/sub/edited.txt")
    assert after.body == b"second, longer" and after.headers["ETag"] != before.headers["ETag"]
    assert site.http("GET", "/sub/edited.txt", headers={"If-None-Match": before.headers["ETag"]}).status == 200


def test_gzip_variants(site):
    plain = site.http("GET", "/index.html")
    zipped = site.http("GET", "/index.html", headers={"Accept-Encoding": "gzip"})
    assert plain.headers["Content-Encoding"] is None and plain.body.decode() == INDEX
    assert zipped.headers["Content-Encoding"] == "gzip" and gzip.decompress(zipped.body).decode() == INDEX
    assert "accept-encoding" in zipped.headers["Vary"].lower() and "accept-encoding" in plain.headers["Vary"].lower()
    assert zipped.headers["ETag"] != plain.headers["ETag"], "the gzip variant has its own ETag"
    assert int(zipped.headers["Content-Length"]) == len(zipped.body) < len(plain.body)
    assert site.http("GET", "/index.html", headers={"If-None-Match": zipped.headers["ETag"], "Accept-Encoding": "gzip"}).status == 304
    assert site.http("GET", "/index.html", headers={"If-None-Match": plain.headers["ETag"]}).status == 304
    assert site.http("GET", "/index.html", headers={"If-None-Match": zipped.headers["ETag"]}).status == 200, "plain asked, gzip tag held"
    css = site.http("GET", "/style.css", headers={"Accept-Encoding": "gzip"})
    assert css.headers["Content-Encoding"] == "gzip" and gzip.decompress(css.body).decode() == STYLE
    for tiny in ["/app.js", "/sub/index.html", "/data.json"]:
        reply = site.http("GET", tiny, headers={"Accept-Encoding": "gzip"})
        assert reply.headers["Content-Encoding"] is None, f"{tiny} is under 1 KiB and stays plain"
    png = site.http("GET", "/image.png", headers={"Accept-Encoding": "gzip"})
    assert png.headers["Content-Encoding"] is None and len(png.body) == 2008, "images are not recompressed"


def test_no_gzip_with_compression_off(start, site_root):
    server = start("--compression", "off", public=site_root)
    reply = server.http("GET", "/index.html", headers={"Accept-Encoding": "gzip"})
    assert reply.headers["Content-Encoding"] is None and reply.body.decode() == INDEX


def test_head_of_a_file(site):
    conn = Conn(site.port)
    for encoding in ["identity", "gzip"]:
        conn.request("GET", "/index.html", headers={"Accept-Encoding": encoding})
        get = conn.read_response()
        conn.request("HEAD", "/index.html", headers={"Accept-Encoding": encoding})
        head = conn.read_response(head=True)
        assert head.status == 200 and head.body == b""
        assert head.header("Content-Length") == str(len(get.body)) and head.header("ETag") == get.header("ETag")
    conn.close()


def test_only_get_and_head(site):
    reply = site.http("POST", "/index.html", body=b"x")
    assert reply.status == 405 and {m.strip() for m in reply.headers["Allow"].split(",")} == {"GET", "HEAD"}


@pytest.mark.parametrize("target", [
    b"/../outside.txt", b"/%2e%2e/outside.txt", b"/%2E%2E/%2E%2E/etc/passwd", b"/sub/../../outside.txt", b"/sub/..%2f..%2foutside.txt",
    b"/sub%2f..%2findex.html", b"/sub%2Fpage.txt", b"/app.js%00.html", b"/app.js%00", b"/..\\outside.txt", b"/sub\\page.txt",
    b"/%5c..%5coutside.txt", b"/.secret", b"/%2esecret", b"/sub/.env", b"/.git/config", b"/.git/", b"/./index.html", b"/sub/./page.txt",
    b"/escape.txt", b"/escape-dir/", b"/escape-dir/index.html", b"/sub/relative-escape.txt", b"//etc/passwd", b"/etc/passwd",
    b"/nope.html", b"/sub/nope/", b"/%", b"/%zz", b"/%c3%28",
])
def test_no_way_out_of_the_root(site, target):
    response, _ = raw(site.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert response.startswith(b"HTTP/1.1 404 "), (target, response[:80])
    assert b"OUTSIDE-CONTENT" not in response and b"HIDDEN-CONTENT" not in response
    assert b"root:" not in response
