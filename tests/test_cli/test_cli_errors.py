"""CLI paper cuts: one-line errors (no traceback), `memvault demo` twice, its real default."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from memvault.cli import app
from memvault.store.datadir import DataDirLock


def _one_line_error(result: Result) -> str:
    """Assert `result` failed with exactly one `error: ...` line and no traceback; return it."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_vault_errors_print_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path)]
    assert runner.invoke(app, ["operator", "create-tenant", "acme", *data]).exit_code == 0

    again = _one_line_error(runner.invoke(app, ["operator", "create-tenant", "acme", *data]))
    assert "exists" in again
    unknown = runner.invoke(
        app, ["keys", "issue", "--tenant", "nope", "--user", "u", "--agent", "a", *data]
    )
    assert "tenant" in _one_line_error(unknown)
    bad_id = _one_line_error(runner.invoke(app, ["operator", "create-tenant", "a b", *data]))
    assert "tenant_id" in bad_id
    for line in (again, bad_id):
        assert str(tmp_path) not in line


def test_invalid_setting_prints_one_line_without_its_value(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["reconcile", "--data-dir", str(tmp_path)],
        env={"MEMVAULT_EMBED_THREADS": "sekrit-not-a-number"},
    )
    line = _one_line_error(result)
    assert line == "error: invalid setting: MEMVAULT_EMBED_THREADS (int_parsing)"


def test_locked_data_dir_prints_one_line(tmp_path: Path) -> None:
    lock = DataDirLock.acquire(tmp_path)
    try:
        for argv in (
            ["operator", "create-tenant", "acme"],
            ["keys", "issue", "--tenant", "acme", "--user", "u", "--agent", "a"],
            ["reconcile"],
        ):
            result = CliRunner().invoke(app, [*argv, "--data-dir", str(tmp_path)])
            assert "data directory" in _one_line_error(result)
    finally:
        lock.release()


def test_cli_restores_the_umask() -> None:
    before = os.umask(0o022)
    os.umask(before)
    CliRunner().invoke(
        app, ["reconcile", "--data-dir", "/nonexistent"], env={"MEMVAULT_EMBED_THREADS": "x"}
    )
    after = os.umask(before)
    assert after == before


def test_demo_runs_twice_on_the_same_data_dir(tmp_path: Path) -> None:
    outputs = []
    for _ in range(2):
        result = CliRunner().invoke(app, ["demo", "--data-dir", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output
        outputs.append(result.output)
    for out in outputs:
        assert "credential_refused" in out
        assert "acme/coder sees only the shared note" in out
        assert "verified=True" in out
        assert "globex/planner still lists 1 memories" in out
        assert "Zq8vT2mW9xLp" not in out
    first_tenants = {w for w in outputs[0].split() if w.startswith("'acme-")}
    second_tenants = {w for w in outputs[1].split() if w.startswith("'acme-")}
    assert first_tenants and second_tenants and first_tenants != second_tenants


def test_demo_help_names_its_real_default() -> None:
    result = CliRunner().invoke(app, ["demo", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    assert "default: a fresh temporary directory" in text
    assert "MEMVAULT_DATA_DIR or .memvault" not in text


@pytest.mark.parametrize("command", ["serve", "reconcile", "demo"])
def test_every_command_help_still_renders(command: str) -> None:
    assert CliRunner().invoke(app, [command, "--help"]).exit_code == 0


def test_unexpected_errors_print_their_type_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kw: object) -> None:
        raise RuntimeError(f"engine failed at {tmp_path}/private/wal")

    monkeypatch.setattr("memvault.cli.open_cli_services", broken)
    argv = ["reconcile", "--data-dir", str(tmp_path)]

    line = _one_line_error(CliRunner().invoke(app, argv))
    assert line == "error: unexpected RuntimeError (MEMVAULT_DEBUG=1 shows the traceback)"

    debug = CliRunner().invoke(app, argv, env={"MEMVAULT_DEBUG": "1"})
    assert isinstance(debug.exception, RuntimeError)
