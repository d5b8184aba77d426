"""The to-do example end to end: a seeded random sequence of actions against a model of the list kept
here; every subscriber converges on the model and every batch is minimal."""
import random

import pytest

from e2e_helpers import SSEClient, apply_ops, check_minimal, normalised, run_binary


def expected(todos):
    """The documented rendering: "To do" then "Done", each in the list's order."""
    def items(done):
        return [{"id": t["id"], "kind": "todo", "model": {"title": t["title"], "done": t["done"]}} for t in todos if t["done"] == done]
    return [{"id": "todo", "model": {"title": "To do"}, "items": items(False)},
            {"id": "done", "model": {"title": "Done"}, "items": items(True)}]


def index_of(todos, tid):
    return next(i for i, t in enumerate(todos) if t["id"] == tid)


def random_title(rng):
    words = ["milk", "eggs", "call Ana", "fix bike", "tax return", "plant tomatoes", "é", "日本語", "🙂 emoji"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))


def next_action(rng, todos):
    """A random action and what it must do to the model: (name, body, apply or None when it must be refused)."""
    ids = [t["id"] for t in todos]
    choice = rng.choices(["add", "toggle", "rename", "remove", "move", "clearDone", "bad"], [6, 5, 2, 2, 4, 1, 2])[0]
    if choice == "add" or not ids:
        title = random_title(rng)
        before = rng.choice(ids + [None, None]) if ids else None
        body = {"title": title, **({"before": before} if before else {})}

        def add(model, new_id):
            model.insert(index_of(model, before) if before else len(model), {"id": new_id, "title": title, "done": False})
        return "add", body, add
    tid = rng.choice(ids)
    if choice == "toggle":
        return "toggle", {"id": tid}, lambda model, _: model[index_of(model, tid)].update(done=not model[index_of(model, tid)]["done"])
    if choice == "rename":
        title = random_title(rng)
        return "rename", {"id": tid, "title": title}, lambda model, _: model[index_of(model, tid)].update(title=title)
    if choice == "remove":
        return "remove", {"id": tid}, lambda model, _: model.pop(index_of(model, tid))
    if choice == "move":
        before = rng.choice(ids + [None])

        def move(model, _):
            if before == tid:
                return
            todo = model.pop(index_of(model, tid))
            model.insert(index_of(model, before) if before else len(model), todo)
        return "move", {"id": tid, "before": before}, move
    if choice == "clearDone":
        return "clearDone", {}, lambda model, _: model.__setitem__(slice(None), [t for t in model if not t["done"]])
    return rng.choice([
        ("toggle", {"id": "t-unknown"}, None),
        ("rename", {"id": tid, "title": ""}, None),
        ("rename", {"id": tid, "title": "x" * 201}, None),
        ("add", {"title": "ok", "before": "nope"}, None),
        ("move", {"id": tid}, None),
        ("remove", {"id": tid, "extra": 1}, None),
    ])


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_actions_converge_with_minimal_batches(server, seed):
    rng = random.Random(seed)
    model = []
    with SSEClient(server.port, "/feeds/todo/events") as plain, SSEClient(server.port, "/feeds/todo/events", gzip=True) as zipped:
        subscribers = {"plain": plain, "gzip": zipped}
        documents = {name: client.expect_event("snapshot")[1] for name, client in subscribers.items()}
        version = documents["plain"]["version"]
        assert normalised(documents["plain"]) == expected(model), f"seed {seed}"
        late = None
        for step in range(120):
            if step == 60:  # a subscriber that joins halfway starts from the current snapshot
                late = SSEClient(server.port, "/feeds/todo/events")
                subscribers["late"] = late
                documents["late"] = late.expect_event("snapshot")[1]
                assert normalised(documents["late"]) == expected(model), f"seed {seed}, step {step}"
            name, body, apply = next_action(rng, model)
            where = f"seed {seed}, step {step}: {name} {body}"
            reply = server.http("POST", f"/feeds/todo/actions/{name}", json_body=body)
            if apply is None:
                assert reply.status == 422, f"{where}: {reply}"
                assert reply.json()["detail"].split(":")[0] in body or reply.json()["detail"].startswith("before"), where
                assert server.get("/feeds/todo")["version"] == version, where
                continue
            assert reply.status == 200, f"{where}: {reply}"
            result = reply.json()
            previous = expected(model)
            if result["ops"] == 0:
                apply(model, None)
                assert expected(model) == previous and result["version"] == version, where
                continue
            assert result["version"] == version + 1, where
            batches = {}
            for client_name, client in subscribers.items():
                _, batch = client.expect_event("batch")
                assert (batch["from"], batch["version"]) == (version, version + 1), where
                assert len(batch["ops"]) == result["ops"], where
                batches[client_name] = batch
            ops = batches["plain"]["ops"]
            assert all(b["ops"] == ops for b in batches.values()), f"{where}: every subscriber gets the same batch"
            new_id = next((op["item"]["id"] for op in ops if op["op"] == "insert"), None)
            apply(model, new_id)
            for client_name in subscribers:
                before_doc = documents[client_name]
                documents[client_name] = {**apply_ops(before_doc, ops), "version": version + 1}
                check_minimal(before_doc, documents[client_name], ops)
                assert normalised(documents[client_name]) == expected(model), f"{where}: {client_name} diverged"
            kinds = sorted(op["op"] for op in ops)
            if name == "toggle":
                assert kinds == ["move", "update"], f"{where}: a toggle is one move and one update, not {kinds}"
            if name in ("add", "remove", "rename"):
                assert kinds == [{"add": "insert", "remove": "delete", "rename": "update"}[name]], f"{where}: {kinds}"
            if name == "move":
                assert kinds == ["move"], f"{where}: {kinds}"
            version += 1
        assert normalised(server.get("/feeds/todo")) == expected(model), f"seed {seed}"
        for client in subscribers.values():
            assert client.next_event(timeout=0.2) is None, f"seed {seed}: one batch per change, nothing more"
        late.close()


def test_the_list_is_capped_at_500(server):
    for number in range(500):
        assert server.http("POST", "/feeds/todo/actions/add", json_body={"title": f"item {number}"}).status == 200
    reply = server.http("POST", "/feeds/todo/actions/add", json_body={"title": "one too many"})
    assert reply.status == 422 and "500" in reply.json()["detail"]
    assert server.http("POST", "/feeds/todo/actions/clearDone").status == 200
    assert sum(len(s["items"]) for s in server.get("/feeds/todo")["sections"]) == 500


def test_examples_none_serves_no_feeds(start):
    server = start("--examples", "none")
    assert server.get("/feeds") == []
    assert server.http("POST", "/feeds/todo/actions/add", json_body={"title": "x"}).status == 404
    server.put("home", {"sections": []})  # the name is free: an ordinary feed
    assert server.get("/feeds") == [{"feed": "home", "version": 1, "kind": "snapshot"}]


def test_examples_can_be_chosen(start):
    server = start("--examples", "todo,forecast")
    assert [entry["feed"] for entry in server.get("/feeds")] == ["forecast", "todo"]


def test_an_unknown_example_is_a_usage_error():
    result = run_binary("--examples", "home,nope", "--port", "0")
    assert result.returncode == 2 and "'nope' is not an example" in result.stderr, result.stderr
    result = run_binary("--port", "0", env={"DIFFSTREAM_EXAMPLES": "bogus"})
    assert result.returncode == 2 and "DIFFSTREAM_EXAMPLES" in result.stderr, result.stderr
