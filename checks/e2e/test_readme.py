"""The README's curl examples, run in order against the built binary (issue 37), so they never drift:
each command as written, with the server's address for 127.0.0.1:8080. A command followed by a comment
holding JSON must print that JSON; a stream (`curl -N`) must show its opening events; every other
command must get a 2xx. A shell variable set from a command (`id=$(curl … | python3 -c …)`) is run by
bash and its value used where the later commands say `$id`; a stream that resumes from it
(`Last-Event-ID`, `lastEventId=`) must start with exactly the batches missed since, no snapshot (issue 50).
The error text the README quotes is the API's."""
import json
import pathlib
import re
import shlex
import subprocess

from e2e_helpers import ROOT

README = (ROOT / "README.md").read_text()


ASSIGNMENT = re.compile(r"^(\w+)=\$\((.*)\)$")


def curl_examples():
    """(command, expected JSON or None) for each curl command (or variable set from one) of the first sh
    block under 'Try it with curl'."""
    section = README[README.index("## Try it with curl"):]
    block = section[section.index("```sh\n") + 6:]
    block = block[:block.index("```")]
    commands, current = [], None
    for line in block.splitlines():
        if line.startswith("curl ") or ASSIGNMENT.match(line):
            current = [line]
            commands.append([current, None])
        elif line.startswith("# ") and commands and commands[-1][1] is None and line[2:].startswith("{"):
            commands[-1][1] = json.loads(line[2:])
            current = None
        elif line.startswith("#") or not line.strip():
            current = None
        elif current is not None:
            current.append(line)  # a command continued (the PUT's body)
    return [("\n".join(lines), expected) for lines, expected in commands]


def test_the_readme_has_curl_examples():
    examples = curl_examples()
    assert len(examples) >= 8 and examples[0][1] is not None, examples
    resumes = [command for command, _ in examples if "Last-Event-ID: $id" in command or "lastEventId=$id" in command]
    assert len(resumes) == 2 and any(ASSIGNMENT.match(command) for command, _ in examples), examples


def events(stream):
    """(event, data) of each event of an event stream's text (comments and `retry:` left out)."""
    found = []
    for block in stream.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


def test_the_readmes_curl_examples_work_in_order(start):
    server = start()
    base = f"http://127.0.0.1:{server.port}"
    variables = {}
    for command, expected in curl_examples():
        command = command.replace("http://127.0.0.1:8080", base)
        assignment = ASSIGNMENT.match(command)
        if assignment:  # as a shell runs it, pipe included
            result = subprocess.run(["bash", "-c", assignment.group(2)], capture_output=True, text=True, timeout=30)
            assert result.returncode == 0 and result.stdout.strip(), (command, result.stdout, result.stderr)
            variables[assignment.group(1)] = result.stdout.strip()
            continue
        for name, value in variables.items():
            command = command.replace(f"${name}", value)
        arguments = shlex.split(command)
        assert arguments[0] == "curl" and "$" not in command, command
        streaming = "-N" in arguments
        extra = ["--max-time", "2"] if streaming else ["-w", "\n%{http_code}"]
        result = subprocess.run(["curl", "-sS", *extra, *arguments[1:]], capture_output=True, text=True, timeout=30)
        if streaming:
            assert result.returncode == 28, (command, result.stderr)  # ended by --max-time: the stream stayed open
            assert result.stdout.startswith("retry: 2000\n: heartbeat 15\n\n"), (command, result.stdout[:300])
            resumed = next((value for value in variables.values() if value in command), None)
            if resumed is None:
                assert "event: snapshot" in result.stdout, (command, result.stdout[:300])
                continue
            # A resume: exactly the batches after the id's version, up to the feed's current one.
            feed = server.get("/feeds/" + re.search(r"/feeds/([^/?\s]+)/events", command).group(1))
            assert resumed.rsplit(".", 1)[0] == feed["id"].rsplit(".", 1)[0], (resumed, feed["id"])  # the same history
            since = int(resumed.rsplit(".", 1)[1])
            got = events(result.stdout)
            assert [name for name, _ in got] == ["batch"] * (feed["version"] - since) and got, (command, result.stdout)
            assert [(data["from"], data["version"]) for _, data in got] == [(v, v + 1) for v in range(since, feed["version"])], got
            continue
        assert result.returncode == 0, (command, result.stderr)
        body, status = result.stdout.rsplit("\n", 1)
        assert status.startswith("2"), (command, status, body[:300])
        if expected is not None:
            assert json.loads(body) == expected, (command, body)


def test_the_error_text_the_readme_quotes_is_the_apis(start):
    server = start()
    reply = server.http("POST", "/feeds/todo/actions/add", json_body={"title": ""})
    assert reply.status == 422
    detail = reply.json()["detail"]
    assert f'"detail":"{detail}"' in README, detail
    view_models = (ROOT / "docs" / "view-models.md").read_text()  # the to-do example's page quotes it too
    assert f'"detail":"{detail}"' in view_models and f"`{detail}`" in view_models, detail
