"""The image is a production server by default (issue 50): the Dockerfile's ENTRYPOINT is the binary and
its CMD hosts no examples and runs no demo, while `docker run IMAGE --demo` (which replaces the CMD) gets
the examples and the demo, because the image's environment does not turn them off. compose.yaml's
commands are arguments to that ENTRYPOINT. scripts/check-docker-runtime.sh runs the same command in a
minimal root; this checks the files without one."""
import json
import pathlib
import shlex

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def runtime_stage():
    """{"ENV": {name: value}, "ENTRYPOINT": [...], "CMD": [...]} of the Dockerfile's last stage, as Docker
    reads them (continuation lines joined, the last ENTRYPOINT and CMD win)."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    stage = {}
    for line in text.splitlines():
        words = line.split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        instruction, rest = words[0].upper(), (words[1] if len(words) > 1 else "")
        if instruction == "FROM":
            stage = {"ENV": {}}
        elif instruction == "ENV":
            for assignment in shlex.split(rest):
                name, _, value = assignment.partition("=")
                stage["ENV"][name] = value
        elif instruction in ("ENTRYPOINT", "CMD"):
            stage[instruction] = json.loads(rest)  # exec form only: a shell form would not parse
    return stage


def test_the_entrypoint_is_the_binary():
    assert runtime_stage()["ENTRYPOINT"] == ["diffstream"]


def test_the_default_command_is_a_production_server():
    stage = runtime_stage()
    command = stage["ENTRYPOINT"] + stage.get("CMD", [])
    assert "--demo" not in command, command
    # The binary hosts every example unless told otherwise (docs/configuration.md): the CMD says none.
    assert command[command.index("--examples") + 1] == "none", command
    assert stage["ENV"].get("DIFFSTREAM_DEMO", "") in ("", "0"), stage["ENV"]


def test_demo_on_request_is_not_undone_by_the_environment():
    """`docker run IMAGE --demo` replaces the CMD: the examples then come from the environment's default,
    which must not be none (a demo of nothing)."""
    env = runtime_stage()["ENV"]
    assert "DIFFSTREAM_EXAMPLES" not in env, env
    # Where it listens and keeps its data hold whatever arguments replace the CMD.
    assert env["DIFFSTREAM_HOST"] == "0.0.0.0" and env["DIFFSTREAM_PORT"] == "8080", env
    assert env["DIFFSTREAM_DATA"] == "/data" and env["DIFFSTREAM_PUBLIC"] == "/usr/share/diffstream/Public", env


def test_compose_passes_arguments_to_the_entrypoint_and_names_its_demo():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    instances = {name: service for name, service in compose["services"].items() if service.get("image") == "diffstream:local"}
    assert len(instances) == 3, sorted(compose["services"])
    for name, service in instances.items():
        command = service["command"]
        assert command[0].startswith("--"), f"{name}: {command} (the ENTRYPOINT is diffstream already)"
        assert "--demo" in command and command[command.index("--examples") + 1] == "all", f"{name}: {command}"
    assert "x-diffstream-demo" in compose, "compose.yaml's instances are the demo: its anchor says so"
