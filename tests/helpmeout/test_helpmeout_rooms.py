"""HelpMeOut's rooms are its data flow (issue 30): world -> generator -> monitors -> evaluation, a dozen files at
most at its top, and no room importing one downstream of it (imports read from the source with ``ast``, those
inside functions included, as ``tests/test_layout.py`` reads them)."""

import ast
from pathlib import Path

HMO = Path(__file__).resolve().parents[2] / "ego_adr" / "helpmeout"
ORDER = ("world", "generator", "monitors", "evaluation")


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("ego_adr."):
            out.add(node.value.split(":")[0])  # a registry's factory string
    return out


def test_at_most_twelve_files_at_the_top_and_the_four_rooms():
    top = sorted(p.name for p in HMO.iterdir() if p.is_file() and p.suffix == ".py")
    assert len(top) <= 12, top
    rooms = sorted(p.name for p in HMO.iterdir() if (p / "__init__.py").is_file())
    assert rooms == sorted(ORDER)


def test_no_room_imports_one_downstream_of_it():
    bad = []
    for k, room in enumerate(ORDER):
        later = ORDER[k + 1:]
        for p in (HMO / room).rglob("*.py"):
            for mod in _imports(p):
                parts = mod.split(".")
                if parts[:2] == ["ego_adr", "helpmeout"] and len(parts) > 2 and parts[2] in later:
                    bad.append(f"{p.relative_to(HMO)} imports {mod}")
    assert bad == []


def test_the_checker_sees_a_downstream_import(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("def f():\n    from ego_adr.helpmeout.evaluation.report import table2_row\n")
    assert "ego_adr.helpmeout.evaluation.report" in _imports(p)
