"""No plaintext at rest: 1,000 notes with markers, then grep every file under the data dir."""

from __future__ import annotations

from pathlib import Path

from memvault.scope import Scope
from tests.conftest import ServicesFactory
from tests.disk_scan import files_holding

N_NOTES = 1_000


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _find(root: Path, needles: list[bytes]) -> list[str]:
    return [f"{path.name}:{needles[i].decode()}" for path, i in files_holding(root, needles)]


def test_markers_never_reach_any_file_under_the_data_dir(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    services = make_services("sqlite", data_dir=root)
    agents = [
        services.vault.scoped(Scope("t1", f"u{u}", f"a{a}")) for u in range(2) for a in range(2)
    ]
    markers = [f"qzmarker{i:05d}xj" for i in range(N_NOTES)]
    for i, marker in enumerate(markers):
        agent = agents[i % len(agents)]
        visibility = "shared" if i % 10 == 0 else "private"
        agent.add(
            f"Note {i}: the user mentioned {marker} while talking about travel plans",
            visibility=visibility,
            topics=[f"topic{marker}"],
            source=f"src-{marker}",
        )
    agents[0].update(agents[0].list_notes(limit=1)[0][0].id, text="updated qzupdatedmarkerxj text")
    services.close()  # flush the index and checkpoint nothing away: the WAL files are read too
    names = {p.name for p in _files(root)}
    assert "memvault.db" in names and "keystore.db" in names
    assert any(p.parts[-3:-2] == ("index",) or "index" in p.parts for p in _files(root))
    needles = [m.encode() for m in markers[::7]] + [b"qzupdatedmarkerxj", b"travel plans"]
    assert _find(root, needles) == []


def test_search_still_works_so_the_markers_were_really_indexed(
    make_services: ServicesFactory,
) -> None:
    services = make_services("sqlite")
    agent = services.vault.scoped(Scope("t1", "u1", "a1"))
    agent.add("The user mentioned qzmarker00042xj while talking about travel plans")
    hits = agent.search("travel plans")
    assert len(hits) == 1 and "qzmarker00042xj" in hits[0].note.text
