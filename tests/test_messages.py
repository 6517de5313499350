"""What a user reads names commands, never a development checkout's folders (issue 38 point 13): ``../shared/``
exists only beside a developer's clone, so a message or help text that points there sends a user nowhere."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ego_adr"


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def user_strings(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a module but its docstrings (what can reach a message, a help text or a page)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]


def test_no_message_or_help_names_the_development_folder():
    found = [f"{p.relative_to(PKG.parent)}:{line}: {s[:80]!r}" for p in sorted(PKG.rglob("*.py"))
             for line, s in user_strings(p) if "../shared" in s or "/shared/" in s]
    assert found == []


def test_the_scan_sees_messages_and_leaves_docstrings_alone(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""laid out as ../shared/x"""\n\ndef f():\n    """../shared too"""\n'
                 '    raise ValueError(f"{1} not found (see ../shared/online-mistakes)")\n')
    assert [s for _, s in user_strings(f) if "../shared" in s] == [" not found (see ../shared/online-mistakes)"]
