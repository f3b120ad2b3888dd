"""compose.yaml against `Settings`: no unknown variable, nothing the scale path needs missing."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from memvault.config import Settings
from memvault.store.datadir import needs_lock
from tests.test_deploy.files import (
    ROOT,
    compose,
    documented_env_files,
    env_files_of,
    memvault_services,
    required_variables,
    service_env,
    settings_variables,
)


def _settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in [k for k in os.environ if k.startswith("MEMVAULT_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def _volume_of(service: dict[str, Any], path: str) -> str | None:
    """The named volume mounted at the longest prefix of `path` in the container."""
    best: tuple[int, str] | None = None
    for mount in service.get("volumes", []):
        source, target = str(mount).split(":")[:2]
        if (path == target or path.startswith(target.rstrip("/") + "/")) and (
            best is None or len(target) > best[0]
        ):
            best = (len(target), source)
    return None if best is None else best[1]


def test_every_memvault_variable_in_compose_and_env_files_is_a_setting() -> None:
    known = settings_variables()
    assert "MEMVAULT_DATABASE_URL" in known  # the parser reads the model as it is
    used: set[str] = set()
    for service in memvault_services().values():
        used |= {k for k in service_env(service) if k.startswith("MEMVAULT_")}
    for env in documented_env_files().values():
        used |= {k for k in env if k.startswith("MEMVAULT_")}
    text = (ROOT / "compose.yaml").read_text()
    used |= set(re.findall(r"\bMEMVAULT_[A-Z0-9_]+", text))
    assert used, "compose.yaml sets no MEMVAULT_ variable"
    assert used <= known, f"not settings: {sorted(used - known)}"


def test_every_env_file_compose_names_is_documented() -> None:
    documented = documented_env_files()
    for name, service in compose()["services"].items():
        for path in env_files_of(service):
            assert path in documented, (name, path)
            assert path.startswith("secrets/"), (name, path)


def test_the_server_has_every_setting_the_scale_path_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = memvault_services()["memvault"]
    env = service_env(server)
    assert required_variables() <= set(env)
    settings = _settings(env, monkeypatch)
    assert settings.database_url and settings.database_url.startswith("postgresql+psycopg://")
    assert settings.qdrant_url and settings.qdrant_url.startswith("http://qdrant:")
    assert settings.operator_key is not None and settings.operator_key.get_secret_value()
    # A master key from a variable the env files provide (never generated into a volume).
    assert settings.master_key_env and settings.master_key_env in env
    # The keystore: its own URL, its own volume, outside the data store and DATA_DIR.
    keystore = settings.resolved_keystore_url()
    assert settings.keystore_url and keystore != settings.resolved_database_url()
    keystore_path = keystore.removeprefix("sqlite:///")
    assert not Path(keystore_path).is_relative_to(settings.data_dir)
    keystore_volume = _volume_of(server, keystore_path)
    data_volume = _volume_of(server, str(settings.data_dir))
    assert keystore_volume and data_volume and keystore_volume != data_volume
    assert keystore_volume in compose()["volumes"]
    # The owner's URL is for the one-shot migration only.
    assert settings.database_admin_url is None
    assert not needs_lock(settings)  # nothing single-process in DATA_DIR


def test_migrate_runs_db_upgrade_as_the_owner_before_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = memvault_services()
    migrate, server = services["migrate"], services["memvault"]
    assert migrate["command"][-2:] == ["db", "upgrade"]
    assert migrate.get("restart") == "no"
    settings = _settings(service_env(migrate), monkeypatch)
    assert settings.database_admin_url and settings.database_admin_url.startswith("postgresql")
    app_user = settings.database_url.split("//", 1)[1].split(":", 1)[0]  # type: ignore[union-attr]
    assert app_user == settings.db_app_role
    assert server["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "serve" in server["command"] and "0.0.0.0" in server["command"]


def test_the_qdrant_server_is_within_one_minor_version_of_the_client() -> None:
    pinned = re.search(r'"qdrant-client==(\d+)\.(\d+)', (ROOT / "pyproject.toml").read_text())
    image = compose()["services"]["qdrant"]["image"]
    served = re.fullmatch(r"qdrant/qdrant:v(\d+)\.(\d+)\.\d+", image)
    assert pinned and served, image
    assert pinned.group(1) == served.group(1)
    assert abs(int(pinned.group(2)) - int(served.group(2))) <= 1
