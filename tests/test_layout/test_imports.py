"""The import graph of src/memvault: no cycles, and every arrow points down (DESIGN.md, "Layout").

Every module is parsed with ``ast``; absolute and relative imports that land in ``memvault`` are
resolved to modules (``from pkg import name`` is an arrow to ``pkg.name`` when that is a module,
else to ``pkg``). Imports under ``if TYPE_CHECKING:`` and inside functions count too: a deferred
import is still an arrow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memvault

SRC = Path(memvault.__file__).resolve().parent
ROOT = "memvault"

# Lower number = lower layer. A module may import only modules of its own layer or lower ones.
# Keyed by the first component under memvault (a package or a top-level module).
LAYERS: dict[str, int] = {
    # 0: the foundations
    "errors": 0,
    "config": 0,
    "canonical": 0,
    "ids": 0,
    "batcher": 0,
    "observability": 0,
    # 1: scopes, key handling, write screening, text processing: nothing of the vault
    "scope": 1,  # asks the screen whether an id is a credential
    "keyring": 1,
    "screening": 1,
    "text": 1,
    # 2: infrastructure beneath the service
    "store": 2,
    "tenancy": 2,
    "embed": 2,
    "index": 2,
    "audit": 2,
    # 3: the scoped service
    "vault": 3,
    # 4: the wings
    "amem": 4,
    "compliance": 4,
    "webhooks": 4,  # signed webhooks: the outbox, its deliverer, read alerts
    "runtime": 4,  # the composition root: assembles the vault, its infrastructure and the eraser
    # 5: the surfaces
    "api": 5,
    "client": 5,
    "mcp": 5,
    "console": 5,
    "cli": 5,
    "demo": 5,
    # 6: the console script, which loads the CLI only when the server extra is installed
    "_entry": 6,
}
# Fakes shipped with the package: test support, may import anything.
UNCONSTRAINED = {"testing"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a memvault module."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == ROOT or alias.name.startswith(ROOT + "."):
                    target = _resolve(alias.name, modules)
                    if target is not None:
                        yield target
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                full = f"{prefix}.{node.module}" if node.module else prefix
            else:
                full = node.module or ""
            if not (full == ROOT or full.startswith(ROOT + ".")):
                continue
            for alias in node.names:
                sub = f"{full}.{alias.name}"
                if sub in modules:
                    yield sub
                    continue
                target = _resolve(full, modules)
                if target is not None:
                    yield target


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        graph[module] = {t for t in _imports(module, path, modules) if t != module}
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def _layer_key(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_has_a_layer() -> None:
    unknown = sorted(
        m
        for m in _graph()
        if (key := _layer_key(m)) is not None and key not in LAYERS and key not in UNCONSTRAINED
    )
    assert not unknown, f"modules outside the layer table (add them to LAYERS): {unknown}"


def test_no_import_cycles() -> None:
    components = _strongly_connected(_graph())
    report = "\n".join(f"  cycle of {len(c)}: {', '.join(c)}" for c in components)
    assert not components, f"{len(components)} import cycle(s) in memvault:\n{report}"


def test_arrows_point_down() -> None:
    upward = []
    for module, targets in sorted(_graph().items()):
        key = _layer_key(module)
        if key is None or key in UNCONSTRAINED or key not in LAYERS:
            continue
        for target in sorted(targets):
            target_key = _layer_key(target)
            if target_key is None or target_key == key:
                continue
            if target_key in UNCONSTRAINED:
                upward.append(f"  {module} -> {target} (testing is not for the product)")
                continue
            if target_key in LAYERS and LAYERS[target_key] > LAYERS[key]:
                upward.append(
                    f"  {module} (layer {LAYERS[key]}, {key}) -> "
                    f"{target} (layer {LAYERS[target_key]}, {target_key})"
                )
    assert not upward, f"{len(upward)} upward import(s):\n" + "\n".join(upward)


def test_the_graph_is_seen() -> None:
    """Guard the parser itself: a known arrow must be found."""
    graph = _graph()
    assert "memvault.errors" in graph
    assert any(targets for targets in graph.values()), "no imports resolved at all"
