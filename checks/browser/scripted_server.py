"""A small scripted stand-in for the server, for the page's tests that need answers the real binary does
not give (yet): it serves Public/ and answers the feed `home` and its event stream as told, on the
single-feed route and on the multi-feed one (`/events?feed=home…`, which the page's hub uses)."""
import http.server
import json
import pathlib
import threading

PUBLIC = pathlib.Path(__file__).resolve().parents[2] / "Public"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJkaWZmc3RyZWFtIjp7fX0.c2lnbmF0dXJl"
SNAPSHOT = {"feed": "home", "version": 1, "sections": [
    {"id": "s", "model": {"title": "Private"}, "items": [{"id": "a", "kind": "banner", "model": {"title": "Only for you"}}]}]}
TYPES = {".html": "text/html; charset=utf-8", ".js": "application/javascript; charset=utf-8", ".css": "text/css", ".svg": "image/svg+xml"}


class ScriptedServer:
    """Serves Public/; `/feeds/home` and its events need the cookie `diffstreamAuthorization=TOKEN`.

    `without_token` is the answer without it (401 or 403); with it, the stream sends a snapshot and,
    when `expire` is set, then ends with `event: unauthorized` (the token expired). With `without_token=None`
    no token is needed; files named in `missing` are not served. With `outage`, the snapshot is followed
    by `event: unavailable` (issue 26: the server cannot reach Redis), and, once `recover()` is called,
    by `event: available` and the batch to version 2."""

    def __init__(self, without_token=401, expire=False, missing=(), outage=False):
        self.without_token = without_token
        self.expire = expire
        self.outage = outage
        self.recovered = threading.Event()
        self.missing = set(missing)
        self.stream_requests = []  # (path, Cookie header) of each event-stream request
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, body, content_type="application/json", extra=()):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def refuse(self):
                if server.without_token == 401:
                    self.answer(401, {"error": "unauthorized", "detail": "no token"}, extra=[("WWW-Authenticate", "Bearer")])
                else:
                    self.answer(403, {"error": "forbidden", "detail": "not allowed"})

            def do_POST(self):  # every write is refused like a read without the token
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.refuse()

            def do_GET(self):
                path = self.path.split("?")[0]
                authorized = server.without_token is None or f"diffstreamAuthorization={TOKEN}" in (self.headers.get("Cookie") or "")
                if path in ("/feeds/home/events", "/events"):
                    multi = path == "/events"
                    server.stream_requests.append((self.path, self.headers.get("Cookie")))
                    if not authorized:
                        return self.refuse()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.end_headers()
                    prefix = "home@" if multi else ""
                    text = f"retry: 2000\n\nevent: snapshot\nid: {prefix}ds1.f00d.1\ndata: {json.dumps({**SNAPSHOT, 'history': 'f00d'})}\n\n"
                    if server.expire:
                        text += 'event: unauthorized\ndata: {"feed":"home","error":"token expired"}\n\n'
                    if server.outage:
                        text += 'event: unavailable\ndata: {"feed":"home","detail":"redis at 127.0.0.1:6379: connection refused"}\n\n'
                    self.wfile.write(text.encode())
                    self.wfile.flush()
                    if server.outage:
                        server.recovered.wait(30)
                        ops = [{"op": "update", "item": "a", "kind": "banner", "model": {"title": "Back"}}]
                        batch = {"feed": "home", "history": "f00d", "from": 1, "version": 2, "ops": ops}
                        self.wfile.write(('event: available\ndata: {"feed":"home"}\n\n'
                                          f"event: batch\nid: {prefix}ds1.f00d.2\ndata: {json.dumps(batch)}\n\n").encode())
                        self.wfile.flush()
                    if not server.expire:
                        server.closed.wait(30)  # hold the stream open until the test ends
                    return None
                if path == "/feeds/home":
                    return self.answer(200, SNAPSHOT) if authorized else self.refuse()
                if path == "/feeds":  # home, as a hosted view model with one action (its writes are refused)
                    return self.answer(200, [{"feed": "home", "version": 1, "kind": "viewModel", "patch": False,
                                              "actions": [{"name": "refresh", "public": False, "fields": []}]}])
                file = PUBLIC / ("index.html" if path == "/" else path.lstrip("/"))
                if file.is_file() and PUBLIC in file.resolve().parents and file.name not in server.missing:
                    return self.answer(200, file.read_bytes(), TYPES.get(file.suffix, "application/octet-stream"))
                return self.answer(404, {"error": "not found"})

        self.closed = threading.Event()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def recover(self):
        self.recovered.set()

    def stop(self):
        self.recovered.set()
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()
