"""Private feeds with signed tokens (issue 13): who may read and write which feed."""
import time

import pytest

from e2e_helpers import (JWT_SECRET, SSEClient, jwt_token, rights, rs256_token, rsa_key_pair, run_binary,
                         snapshot)

ADMIN = "admin-token-for-e2e"
PUBLIC = ["lobby", "home"]


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "jwt-secret"
    path.write_text(JWT_SECRET + "\n")
    return path


@pytest.fixture
def private_server(start, secret_file):
    server = start("--jwt-secret-file", secret_file, "--private", "--public-feeds", ",".join(PUBLIC), "--token", ADMIN)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    for feed in ["user-42-inbox", "user-7-inbox", "lobby"]:
        server.put(feed, snapshot(("s", ["i1"])), headers=admin)
    return server


def bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


def matches(patterns, feed):
    import fnmatch
    return any(fnmatch.fnmatchcase(feed, p.replace("[", "[[]").replace("?", "[?]")) for p in patterns)


TOKENS = {
    "none": None,
    "user-42": rights(subscribe=["user-42-*", "lobby"], publish=["user-42-inbox"]),
    "reader": rights(subscribe=["*"]),
    "writer": rights(publish=["*"]),
    "admin": "admin",
}
FEEDS = ["user-42-inbox", "user-7-inbox", "user-7-missing", "lobby", "home", "blackjack"]


def expected(token_name, feed, route):
    """The oracle: the answer a route must give to a token for a feed."""
    claims = TOKENS[token_name]
    exists = feed != "user-7-missing"
    readable = feed in PUBLIC or claims == "admin" or (claims and matches(claims["diffstream"]["subscribe"], feed))
    if (route == "deal" and feed != "blackjack") or (route == "PATCH" and feed != "home"):
        # No route takes it: as a read, the right to read first (a missing feed is not told apart from
        # one that may not be read), then a missing feed named as missing (issue 50), then no such
        # action (404) or only the home view model takes PATCH (405).
        if not readable:
            return 401 if claims is None else 403
        if not exists:
            return 404
        return 404 if route == "deal" else 405
    if route in ("GET", "events"):
        if not readable:
            return 401 if claims is None else 403
        return 200 if exists else 404
    # PUT, DELETE, PATCH, and actions (public or not, once a credential is configured)
    if claims is None:
        return 401
    if not (claims == "admin" or matches(claims["diffstream"]["publish"], feed)):
        return 403
    if route == "deal":
        return 200
    if feed in ("home", "blackjack"):
        return 200 if route == "PATCH" else 409
    if route == "DELETE":
        return 204 if exists else 404
    return 200 if exists else 201


def token_for(name):
    claims = TOKENS[name]
    return ADMIN if claims == "admin" else (jwt_token(claims) if claims else None)


def test_the_access_matrix_of_feeds_tokens_and_routes(private_server):
    server = private_server
    for name in TOKENS:
        token = token_for(name)
        for feed in FEEDS:
            for route in ["GET", "events", "PUT", "PATCH", "deal", "DELETE"]:
                want = expected(name, feed, route)
                if route == "GET":
                    reply = server.http("GET", f"/feeds/{feed}", headers=bearer(token))
                elif route == "events":
                    with SSEClient(server.port, f"/feeds/{feed}/events", headers=bearer(token)) as client:
                        status = client.status
                        if status == 200:
                            client.expect_event("snapshot")
                    assert status == want, (name, feed, route, status)
                    continue
                elif route == "PUT":
                    reply = server.http("PUT", f"/feeds/{feed}", json_body=snapshot(("s", ["i1", f"i-{name}"])),
                                        headers=bearer(token))
                elif route == "PATCH":
                    reply = server.http("PATCH", f"/feeds/{feed}", json_body={"banner": None}, headers=bearer(token))
                elif route == "deal":
                    reply = server.http("POST", f"/feeds/{feed}/actions/deal", headers=bearer(token))
                else:
                    reply = server.http("DELETE", f"/feeds/{feed}", headers=bearer(token))
                assert reply.status == want, (name, feed, route, reply)
                if reply.status == 401:
                    assert reply.headers["WWW-Authenticate"].startswith("Bearer"), reply.headers
                if reply.status in (401, 403):
                    assert set(reply.json()) == {"error", "detail"}
                    assert not token or token not in reply.body.decode()
                if route == "DELETE" and reply.status == 204:  # put it back for the next token
                    server.put(feed, snapshot(("s", ["i1"])), headers=bearer(ADMIN))
                if route == "PUT" and reply.status == 201:  # the missing feed stays missing
                    assert server.http("DELETE", f"/feeds/{feed}", headers=bearer(ADMIN)).status == 204


def test_a_private_feeds_existence_does_not_leak(private_server):
    token = jwt_token(rights(subscribe=["user-42-*"]))
    for path in ["/feeds/user-7-inbox", "/feeds/user-7-missing"]:
        reply = private_server.http("GET", path, headers=bearer(token))
        assert reply.status == 403 and reply.json()["error"] == "forbidden", reply
    first, second = (private_server.http("GET", p, headers=bearer(token)).json()["detail"]
                     for p in ["/feeds/user-7-inbox", "/feeds/user-7-missing"])
    assert first.replace("user-7-inbox", "X") == second.replace("user-7-missing", "X")


def test_the_listing_shows_only_readable_feeds(private_server):
    def listed(token):
        reply = private_server.http("GET", "/feeds", headers=bearer(token))
        assert reply.status == 200, reply
        return [entry["feed"] for entry in reply.json()]
    assert listed(None) == ["home", "lobby"]
    assert listed(jwt_token(rights(subscribe=["user-42-*"]))) == ["home", "lobby", "user-42-inbox"]
    assert listed(jwt_token(rights(publish=["*"]))) == ["home", "lobby"]
    # The home family is listed once (issue 38) to whoever may read some member of it.
    everything = ["blackjack", "forecast", "home", "home.*", "lobby", "todo", "user-42-inbox", "user-7-inbox", "week"]
    assert listed(jwt_token(rights(subscribe=["*"]))) == everything
    assert listed(ADMIN) == everything
    assert private_server.http("GET", "/feeds", headers=bearer("garbage")).status == 401


@pytest.mark.parametrize("case, make, reason", [
    ("forged signature", lambda: jwt_token(rights(subscribe=["*"]), secret="another-secret-of-at-least-32-bytes!"), "bad signature"),
    ("alg none", lambda: jwt_token(rights(subscribe=["*"]), alg="none"), "algorithm"),
    ("alg none signed", lambda: jwt_token(rights(subscribe=["*"]), header={"alg": "none"}), "algorithm"),
    ("expired", lambda: jwt_token(rights(subscribe=["*"], lifetime=-120)), "expired"),
    ("not yet valid", lambda: jwt_token(rights(subscribe=["*"]) | {"nbf": int(time.time()) + 600}), "not yet valid"),
    ("malformed", lambda: "not.a.jwt", "malformed"),
    ("two parts", lambda: "abc.def", "malformed"),
    ("kid elsewhere", lambda: jwt_token(rights(subscribe=["*"]), secret="another-secret-of-at-least-32-bytes!",
                                        header={"alg": "HS256", "kid": "../../../dev/null"}), "bad signature"),
])
def test_bad_tokens_get_401_saying_why_without_echoing_them(private_server, case, make, reason):
    token = make()
    for path in ["/feeds/user-7-inbox", "/feeds/user-7-inbox/events"]:
        for headers in [bearer(token), {"Cookie": f"diffstreamAuthorization={token}"}]:
            reply = private_server.http("GET", path, headers=headers)
            assert reply.status == 401, (case, path, reply)
            assert reply.headers["WWW-Authenticate"] == 'Bearer realm="diffstream", error="invalid_token"', reply.headers
            assert reason in reply.json()["detail"], reply
            assert token not in reply.body.decode()
    reply = private_server.http("PUT", "/feeds/user-7-inbox", json_body=snapshot(), headers=bearer(token))
    assert reply.status == 401 and reason in reply.json()["detail"], reply


def test_an_empty_cookie_is_no_token(private_server):
    reply = private_server.http("GET", "/feeds/user-42-inbox", headers={"Cookie": "diffstreamAuthorization="})
    assert reply.status == 401 and "private" in reply.json()["detail"], reply
    token = jwt_token(rights(subscribe=["user-42-*"]))
    cookie = {"Cookie": f"theme=dark; diffstreamAuthorization={token}"}
    assert private_server.http("GET", "/feeds/user-42-inbox", headers=cookie).status == 200
    with SSEClient(private_server.port, "/feeds/user-42-inbox/events", headers=cookie) as client:
        assert client.status == 200
        client.expect_event("snapshot")


def test_hs256_signed_with_the_public_key_is_refused(start, tmp_path, secret_file):
    private_key, public_key = rsa_key_pair(tmp_path)
    confused = jwt_token(rights(subscribe=["*"]), secret=public_key.read_bytes())
    genuine = rs256_token(rights(subscribe=["*"]), private_key)
    rsa_only = start("--jwt-public-key", public_key, "--private")
    assert rsa_only.http("GET", "/feeds/home", headers=bearer(genuine)).status == 200
    reply = rsa_only.http("GET", "/feeds/home", headers=bearer(confused))
    assert reply.status == 401 and "algorithm" in reply.json()["detail"], reply
    both = start("--jwt-public-key", public_key, "--jwt-secret-file", secret_file, "--private")
    assert both.http("GET", "/feeds/home", headers=bearer(genuine)).status == 200
    reply = both.http("GET", "/feeds/home", headers=bearer(confused))
    assert reply.status == 401 and "bad signature" in reply.json()["detail"], reply


def test_the_query_parameter_works_for_event_streams_only_and_stays_out_of_the_logs(private_server):
    token = jwt_token(rights(subscribe=["user-42-*"]))
    with SSEClient(private_server.port, f"/feeds/user-42-inbox/events?authorization={token}") as client:
        assert client.status == 200
        client.expect_event("snapshot")
    assert private_server.http("GET", f"/feeds/user-42-inbox?authorization={token}").status == 401
    with SSEClient(private_server.port, f"/feeds/user-42-inbox/events?lastEventId=x&authorization={token}") as client:
        assert client.status == 200
        client.expect_event("snapshot")
    private_server.wait_log(r"sse disconnect .*user-42-inbox")
    text = private_server.log_text()
    assert "user-42-inbox" in text
    assert token not in text and token.split(".")[2] not in text


def test_a_stream_ends_at_its_tokens_expiry_with_unauthorized(private_server):
    token = jwt_token(rights(subscribe=["user-42-*"], lifetime=1))
    admin = bearer(ADMIN)
    with SSEClient(private_server.port, "/feeds/user-42-inbox/events", headers=bearer(token), timeout=30) as client:
        assert client.status == 200
        client.expect_event("snapshot")
        private_server.put("user-42-inbox", snapshot(("s", ["i1", "i9"])), headers=admin)
        client.expect_event("batch")
        # The server's leeway is 5 s: the stream ends at exp + 5 s, with event: unauthorized last.
        fields, data = client.expect_event("unauthorized", timeout=20)
        assert data["feed"] == "user-42-inbox" and "expired" in data["detail"]
        assert client.wait_closed(5)
        assert "event:" not in client.text
    # Coming back with the same token is refused; a fresh one is welcome.
    reply = private_server.http("GET", "/feeds/user-42-inbox/events", headers=bearer(token))
    assert reply.status == 401 and "expired" in reply.json()["detail"]
    with SSEClient(private_server.port, "/feeds/user-42-inbox/events", headers=bearer(jwt_token(rights(subscribe=["user-42-*"])))) as client:
        assert client.status == 200


def test_the_admin_token_never_expires_a_stream_and_public_feeds_need_none(private_server):
    with SSEClient(private_server.port, "/feeds/lobby/events") as client:
        assert client.status == 200
        client.expect_event("snapshot")
    with SSEClient(private_server.port, "/feeds/user-7-inbox/events", headers=bearer(ADMIN)) as client:
        client.expect_event("snapshot")
        private_server.put("user-7-inbox", snapshot(("s", ["i1", "i3"])), headers=bearer(ADMIN))
        client.expect_event("batch")


def test_diffstream_token_output_is_accepted(start, secret_file):
    made = run_binary("token", "--subscribe", "user-42-*", "--publish", "user-42-inbox", "--lifetime", "300",
                      "--jwt-secret-file", secret_file)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.count(".") == 2
    server = start("--private", env={"DIFFSTREAM_JWT_SECRET": JWT_SECRET})
    assert server.http("PUT", "/feeds/user-42-inbox", json_body=snapshot(), headers=bearer(token)).status == 201
    assert server.http("GET", "/feeds/user-42-inbox", headers=bearer(token)).status == 200
    assert server.http("GET", "/feeds/user-7-inbox", headers=bearer(token)).status == 403
    assert server.http("PUT", "/feeds/user-7-inbox", json_body=snapshot(), headers=bearer(token)).status == 403
    # The secret from the environment signs the same way.
    from_env = run_binary("token", "--subscribe", "*", env={"DIFFSTREAM_JWT_SECRET": JWT_SECRET})
    assert server.http("GET", "/feeds/home", headers=bearer(from_env.stdout.strip())).status == 200
    # Without a secret, or with a short one, it says so and exits 2.
    for env in [{}, {"DIFFSTREAM_JWT_SECRET": "short"}]:
        refused = run_binary("token", "--subscribe", "*", env=env)
        assert refused.returncode == 2 and "secret" in refused.stderr, refused


def test_bad_jwt_settings_stop_the_start(tmp_path):
    short = tmp_path / "short"
    short.write_text("too-short")
    for args, needle in [(["--jwt-secret-file", short], "32"), (["--jwt-secret-file", tmp_path / "missing"], "secret"),
                         (["--jwt-public-key", short], "public key"), (["--private"], "--private"),
                         (["--public-feeds", "bad name!"], "public-feeds")]:
        result = run_binary("--port", "0", "--public", tmp_path, *args)
        assert result.returncode == 2 and needle in result.stderr, (args, result.stderr)


@pytest.mark.parametrize("origin, allowed", [
    ("https://evil.example", False),           # another site
    (None, False),                             # no Origin and no Sec-Fetch-Site
    ("http://sibling.127.0.0.1", False),       # a same-site sibling
    ("null", False),                           # an opaque origin (a sandboxed frame)
    ("own", True),                             # the server's own origin: scheme and Host
])
def test_a_write_with_only_the_cookie_needs_the_servers_own_origin(private_server, origin, allowed):
    """Issue 24: a browser sends the cookie from any site, so a cookie-only write must come from our origin."""
    token = jwt_token(rights(subscribe=["user-42-*"], publish=["user-42-inbox"]))
    headers = {"Cookie": f"diffstreamAuthorization={token}"}
    if origin == "own":
        headers["Origin"] = f"http://127.0.0.1:{private_server.port}"
    elif origin:
        headers["Origin"] = origin
    reply = private_server.http("PUT", "/feeds/user-42-inbox", json_body=snapshot(("s", ["i1", "i2"])), headers=headers)
    if allowed:
        assert reply.status == 200, reply
    else:
        assert reply.status == 403, reply
        detail = reply.json()["detail"]
        assert "cookie" in detail and "Bearer" in detail, detail
    # The same write with the token as a Bearer header is unchanged, whatever the origin.
    bearer_headers = bearer(token) | ({"Origin": headers["Origin"]} if "Origin" in headers else {})
    assert private_server.http("PUT", "/feeds/user-42-inbox", json_body=snapshot(("s", ["i1"])), headers=bearer_headers).status == 200
    # Reads and event streams keep taking the cookie from anywhere.
    read_headers = {"Cookie": headers["Cookie"], "Origin": "https://evil.example"}
    assert private_server.http("GET", "/feeds/user-42-inbox", headers=read_headers).status == 200


def test_a_cookie_write_without_origin_is_taken_with_sec_fetch_site_same_origin(private_server):
    token = jwt_token(rights(publish=["user-42-inbox"]))
    headers = {"Cookie": f"diffstreamAuthorization={token}", "Sec-Fetch-Site": "same-origin"}
    assert private_server.http("PUT", "/feeds/user-42-inbox", json_body=snapshot(("s", ["i3"])), headers=headers).status == 200
    headers["Sec-Fetch-Site"] = "same-site"
    assert private_server.http("PUT", "/feeds/user-42-inbox", json_body=snapshot(("s", ["i4"])), headers=headers).status == 403


def test_a_cookie_write_from_the_public_origin_behind_a_proxy_is_taken(start, secret_file):
    """--public-origin: the origin users reach the server at behind a TLS proxy counts as the server's own."""
    server = start("--jwt-secret-file", secret_file, "--private", "--public-origin", "https://feeds.example")
    token = jwt_token(rights(publish=["inbox"]))
    cookie = {"Cookie": f"diffstreamAuthorization={token}"}
    reply = server.http("PUT", "/feeds/inbox", json_body=snapshot(("s", ["a"])), headers=cookie | {"Origin": "https://feeds.example"})
    assert reply.status == 201, reply
    reply = server.http("PUT", "/feeds/inbox", json_body=snapshot(("s", ["b"])), headers=cookie | {"Origin": "https://other.example"})
    assert reply.status == 403, reply
