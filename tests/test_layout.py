"""The package layout is the data flow: no import circles (imports for type annotations only excepted), eval/ never imports models/, and nothing at the top of
``ego_adr/`` but the shared leaves (taxonomy, store) and the ``run`` entry point. Read from the source with ``ast``,
so the rules hold for every module, imported by a test or not."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ego_adr"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text())
        type_only = {id(n) for blk in ast.walk(tree) if isinstance(blk, ast.If) and "TYPE_CHECKING" in ast.unparse(blk.test)
                     for stmt in blk.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in type_only:  # `if TYPE_CHECKING:` imports exist for annotations only, never at run time
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ego_adr"):
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("ego_adr")]
            else:
                continue
            for t in targets:
                r = resolve(t)
                # a package's own __init__ re-exporting its modules is not a circle through them
                if r and r != m and r != "ego_adr" and not m.startswith(r + "."):
                    edges[m].add(r)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    assert _cycles(_edges(_modules())) == []


def test_eval_never_imports_models():
    edges = _edges(_modules())
    bad = sorted((m, t) for m, ts in edges.items() if m.startswith("ego_adr.eval") for t in ts
                 if t.startswith("ego_adr.models"))
    assert bad == []


def test_only_shared_leaves_at_the_top():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == ["__init__.py", "errors.py", "store.py", "taxonomy.py"]


def test_the_checker_sees_a_circle(tmp_path):
    # the rule above is only worth something if the checker finds a real circle
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]
