"""Parse the deployment files: compose.yaml, the env files documented in docs/deploy.md,
the Dockerfile and the Makefile's install recipe."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memvault.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def settings_variables() -> set[str]:
    """Every environment variable `Settings` reads: its prefix + each field name, upper case."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    return {(prefix + name).upper() for name in Settings.model_fields}


def required_variables() -> set[str]:
    """The variables of `Settings` fields that have no default."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    return {(prefix + n).upper() for n, f in Settings.model_fields.items() if f.is_required()}


def compose() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "compose.yaml").read_text()))


def documented_env_files() -> dict[str, dict[str, str]]:
    """The ```env blocks of docs/deploy.md, by the file name in their first comment line."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    files: dict[str, dict[str, str]] = {}
    for block in re.findall(r"```env\n(.*?)```", text, re.DOTALL):
        lines = block.strip().splitlines()
        name = lines[0].lstrip("# ").strip()
        pairs = (line.split("=", 1) for line in lines[1:] if "=" in line)
        files[name] = {k.strip(): v.strip() for k, v in pairs}
    return files


def env_files_of(service: dict[str, Any]) -> list[str]:
    files = service.get("env_file", [])
    files = [files] if isinstance(files, str | dict) else files
    return [f["path"] if isinstance(f, dict) else str(f) for f in files]


def service_env(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment: its env files (as documented) overlaid by `environment`."""
    documented = documented_env_files()
    env: dict[str, str] = {}
    for name in env_files_of(service):
        env.update(documented[name])
    raw = service.get("environment", {})
    if isinstance(raw, list):
        raw = dict(item.split("=", 1) for item in raw)
    env.update({k: str(v) for k, v in raw.items()})
    return env


def memvault_services() -> dict[str, dict[str, Any]]:
    """The services that run the memvault image."""
    services = compose()["services"]
    return {
        name: s
        for name, s in services.items()
        if s.get("build") or str(s.get("image", "")).startswith("memvault")
    }


def logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined."""
    return text.replace("\\\n", " ").splitlines()


@dataclass(frozen=True)
class Requirement:
    """One `pip install` target: what it installs, with which extras, with or without deps."""

    target: str
    extras: frozenset[str]
    no_deps: bool


def _pip_installs(commands: list[str]) -> set[Requirement]:
    found: set[Requirement] = set()
    for command in commands:
        for part in command.split("&&"):
            if not re.search(r"\bpip\b.*\binstall\b", part):
                continue  # other shell (apt-get, tests) need not even tokenize
            words = shlex.split(part)
            if "pip" not in words or "install" not in words:
                continue
            args = words[words.index("install") + 1 :]
            no_deps = "--no-deps" in args
            if "--upgrade" in args and "pip" in args:
                continue  # upgrading pip itself
            for arg in args:
                if arg.startswith("-"):
                    continue
                match = re.fullmatch(r"([^\[]+)(?:\[([^\]]*)\])?", arg)
                assert match, arg
                extras = frozenset(e.strip() for e in (match.group(2) or "").split(",") if e)
                found.add(Requirement(match.group(1), extras, no_deps))
    return found


def makefile_installs() -> set[Requirement]:
    """The `pip install` targets of the Makefile (its recipe lines)."""
    lines = logical_lines((ROOT / "Makefile").read_text())
    commands = [line.strip() for line in lines if line.startswith("\t")]
    return _pip_installs([c.replace("$(PY)", "python") for c in commands])


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, comments dropped, continuations joined."""
    text = "\n".join(
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.startswith("#")
    )
    out = []
    for line in logical_lines(text):
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def dockerfile_installs() -> set[Requirement]:
    runs = [rest for word, rest in dockerfile_instructions() if word == "RUN"]
    return _pip_installs([re.sub(r"^--\S+\s+", "", run) for run in runs])
