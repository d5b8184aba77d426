"""A scripted stand-in for the server's multi-feed event stream (`GET /events?feed=NAME@ID&…`, the wire
format of docs/protocol.md), for the Chromium tests of Public/diffstream-streams.js before and beside the
real binary. It serves Public/, a test page from checks/browser/pages/, and feeds it writes itself:
`write(feed)` adds a version (one `move`-free batch with an `update`), `create(feed)` makes a feed that
was missing. Every stream request is recorded (`requests`: the feeds= values of each)."""
import http.server
import json
import pathlib
import queue
import threading
import urllib.parse

PUBLIC = pathlib.Path(__file__).resolve().parents[2] / "Public"
PAGES = pathlib.Path(__file__).resolve().parent / "pages"
TYPES = {".html": "text/html; charset=utf-8", ".js": "application/javascript; charset=utf-8", ".mjs": "application/javascript; charset=utf-8"}


class MultiFeedServer:
    def __init__(self, feeds=("a", "b", "c"), allow_origin=None):
        self.lock = threading.Lock()
        self.feeds = {}  # name -> {history, version, sections}
        self.histories = 0
        for name in feeds:
            self.create(name)
        self.streams = []   # [(set of feeds, queue)]
        self.requests = []  # [[feed params]]
        self.allow_origin = allow_origin
        self.closed = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, body, content_type="application/json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                if server.allow_origin:
                    self.send_header("Access-Control-Allow-Origin", server.allow_origin)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/events":
                    return self.events(urllib.parse.parse_qs(url.query).get("feed", []))
                if url.path.startswith("/feeds/"):
                    feed = server.feeds.get(url.path.split("/")[2])
                    return self.answer(200, server.document(url.path.split("/")[2])) if feed else self.answer(404, {"error": "not found"})
                file = PAGES / url.path.lstrip("/") if (PAGES / url.path.lstrip("/")).is_file() else PUBLIC / url.path.lstrip("/")
                if file.is_file():
                    return self.answer(200, file.read_bytes(), TYPES.get(file.suffix, "application/octet-stream"))
                return self.answer(404, {"error": "not found"})

            def events(self, params):
                listed = [(p.split("@", 1)[0], p.split("@", 1)[1] if "@" in p else None) for p in params]
                server.requests.append(params)
                if not listed:
                    return self.answer(400, {"error": "no feed"})
                if all(name not in server.feeds for name, _ in listed):
                    return self.answer(404, {"error": "not found", "detail": "no such feeds"})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                if server.allow_origin:
                    self.send_header("Access-Control-Allow-Origin", server.allow_origin)
                self.end_headers()
                inbox = queue.Queue()
                carried = set()
                with server.lock:
                    text = "retry: 2000\n: heartbeat 15\n\n"
                    for name, position in listed:
                        feed = server.feeds.get(name)
                        if feed is None:
                            text += server.event("notfound", {"feed": name, "error": "not found", "detail": f"no feed named {name}"})
                            continue
                        carried.add(name)
                        prefix = f"ds1.{feed['history']}."
                        version = int(position[len(prefix):]) if position and position.startswith(prefix) else None
                        if version is not None and version <= feed["version"]:
                            for v in range(version + 1, feed["version"] + 1):
                                text += server.batch_event(name, v)
                        else:
                            text += server.event("snapshot", server.document(name, history=True), f"{name}@ds1.{feed['history']}.{feed['version']}")
                    entry = (carried, inbox)
                    server.streams.append(entry)
                try:
                    self.wfile.write(text.encode())
                    self.wfile.flush()
                    while not server.closed.is_set():
                        try:
                            chunk = inbox.get(timeout=0.2)
                        except queue.Empty:
                            chunk = ": heartbeat\n\n"
                        self.wfile.write(chunk.encode())
                        self.wfile.flush()
                except OSError:
                    pass
                finally:
                    with server.lock:
                        server.streams.remove(entry)
                self.close_connection = True
                return None

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def event(kind, data, event_id=None):
        return f"event: {kind}\n" + (f"id: {event_id}\n" if event_id else "") + f"data: {json.dumps(data, separators=(',', ':'))}\n\n"

    def document(self, name, history=False):
        feed = self.feeds[name]
        doc = {"feed": name, "version": feed["version"], "sections": [{"id": "s", "model": None, "items": [
            {"id": f"{name}-i", "kind": "card", "model": {"v": feed["version"]}}]}]}
        if history:
            doc["history"] = feed["history"]
        return doc

    def batch_event(self, name, version):
        feed = self.feeds[name]
        data = {"feed": name, "history": feed["history"], "from": version - 1, "version": version,
                "ops": [{"op": "update", "item": f"{name}-i", "kind": "card", "model": {"v": version}}]}
        return self.event("batch", data, f"{name}@ds1.{feed['history']}.{version}")

    def create(self, name):
        with self.lock:
            self.histories += 1
            self.feeds[name] = {"history": f"{self.histories:016x}", "version": 1}

    def write(self, name):
        with self.lock:
            self.feeds[name]["version"] += 1
            text = self.batch_event(name, self.feeds[name]["version"])
            for carried, inbox in self.streams:
                if name in carried:
                    inbox.put(text)

    def open_streams(self):
        with self.lock:
            return len(self.streams)

    def stop(self):
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()
