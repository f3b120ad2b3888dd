"""The client installs alone: the base wheel in a fresh venv with httpx, pydantic, cryptography.

A wheel of this checkout (`pip wheel --no-deps`) goes into a new venv without the system site
packages; pip resolves its dependencies through the machine's own configuration (index, find
links, cache). In that venv the SDK imports none of the server's packages, talks to a real
`memvault serve` started from the project venv, and checks the server's signed erasure receipt;
the `memvault` script says to install the `server` extra instead of failing with a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_client.conftest import OPERATOR_KEY

ROOT = Path(__file__).resolve().parents[2]

# The distributions a client-only install may hold: the three the base asks for, and theirs.
ALLOWED = {
    "memvault",
    "httpx",
    "anyio",
    "certifi",
    "httpcore",
    "h11",
    "idna",
    "sniffio",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-extensions",
    "typing-inspection",
    "cryptography",
    "cffi",
    "pycparser",
    # what `python -m venv` itself puts in a new venv
    "pip",
    "setuptools",
}
SERVER_MODULES = ("sqlalchemy", "qdrant_edge", "qdrant_client", "numpy", "fastapi", "mcp")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMVAULT_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)  # nothing of this checkout may leak into the venv
    return env


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def lean_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The python of a fresh venv holding only the base wheel and what it depends on."""
    work = tmp_path_factory.mktemp("client-install")
    # Built from a copy: setuptools writes build/ beside the sources, never into the checkout.
    source = work / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    wheels = work / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source, cwd=work)
    (wheel,) = wheels.glob("memvault-*.whl")
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    python = venv / "bin" / "python"
    # The project venv's pip installs into the new venv (no pip download for the venv itself).
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", wheel, cwd=work)
    yield python


def _lean(python: Path, script: str, *args: str) -> str:
    return _run(python, "-c", textwrap.dedent(script), *args, cwd=python.parents[2]).stdout


def test_the_base_install_holds_only_httpx_pydantic_cryptography_and_theirs(
    lean_python: Path,
) -> None:
    names = _lean(
        lean_python,
        """
        from importlib.metadata import distributions
        print("\\n".join(sorted({d.metadata["Name"].lower().replace("_", "-")
                                 for d in distributions()})))
        """,
    ).split()
    assert "memvault" in names and {"httpx", "pydantic", "cryptography"} <= set(names)
    assert set(names) <= ALLOWED, sorted(set(names) - ALLOWED)


def test_the_client_and_receipt_checks_import_no_server_package(lean_python: Path) -> None:
    loaded = json.loads(
        _lean(
            lean_python,
            """
            import json, sys
            import memvault.client, memvault.client.models, memvault.compliance.verify
            import memvault.client.webhooks
            print(json.dumps(sorted(sys.modules)))
            """,
        )
    )
    server = [m for m in loaded if m.partition(".")[0] in SERVER_MODULES]
    assert server == []
    assert "memvault.client" in loaded and "memvault.compliance.verify" in loaded
    assert "memvault.client.webhooks" in loaded


def test_the_console_script_asks_for_the_server_extra(lean_python: Path) -> None:
    script = lean_python.parent / "memvault"
    done = subprocess.run(
        [str(script), "serve"], env=_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "pip install 'memvault[server]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_lean_client_talks_to_a_real_server_and_verifies_its_receipt(
    lean_python: Path, server: str
) -> None:
    out = _lean(
        lean_python,
        """
        import json, sys, uuid
        from memvault.client import Client

        base, operator_key = sys.argv[1:3]
        tenant = "lean" + uuid.uuid4().hex[:10]
        with Client(base, operator_key) as operator:
            admin_key = operator.create_tenant(tenant).api_key
        with Client(base, admin_key) as admin:
            agent_key = admin.issue_key("alice", "assistant").api_key
        with Client(base, agent_key) as agent:
            note = agent.add("The user prefers green tea")
            found = [hit.id for hit in agent.search("what does the user drink?")]
        with Client(base, operator_key) as operator:
            receipt = operator.delete_tenant(tenant, verify=True)
        server = sorted(m for m in sys.modules if m.partition(".")[0] in
                        ("sqlalchemy", "qdrant_edge", "qdrant_client", "numpy", "fastapi", "mcp"))
        print(json.dumps({"found": note.id in found, "verdict": receipt.verdict,
                          "server": server}))
        """,
        server,
        OPERATOR_KEY,
    )
    result = json.loads(out)
    assert result["found"] is True
    assert result["verdict"]  # the receipt's signature and counts checked in the lean venv
    assert result["server"] == []
