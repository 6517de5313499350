"""Where the public EgoErrorVQA evaluator's source is, for the inputs that must be read from it at run time (the
green agent's guidance text, its judges' prompts): never copied into this project, found in one order for every
caller -- an explicit path, ``$EGO_ADR_PUBLIC_EVALUATOR``, beside the annotations (``DATA/public-evaluator`` as
``scripts/download_annotations.py`` lays it out, or the repository around its ``data/json``), then
``../shared/public-evaluator`` next to the project (development and CI)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

ENV = "EGO_ADR_PUBLIC_EVALUATOR"
GREEN_AGENT = Path("src") / "green_agent" / "agent.py"


class PublicSourceMissing(FileNotFoundError):
    """The public evaluator's source is needed but was not found; the message says where it was looked for."""


def candidates(data_root: str | os.PathLike | None = None, explicit: str | os.PathLike | None = None) -> list[Path]:
    """The places looked at, in order (folders holding ``src/green_agent/agent.py``, or that file itself)."""
    out = [Path(p).expanduser() for p in (explicit, os.environ.get(ENV)) if p]
    if data_root:
        root = Path(data_root).expanduser().resolve()
        out += [root / "public-evaluator", root.parent / "public-evaluator", root.parent, root.parent.parent]
    out += _fallbacks()
    return list(dict.fromkeys(out))


def _fallbacks() -> list[Path]:
    """The development copy next to the project checkout (``../shared/public-evaluator``), looked at last."""
    return [Path(__file__).resolve().parents[3] / "shared" / "public-evaluator"]


def find_green_agent(data_root=None, explicit=None, why: str = "the public protocol",
                     how: str = f"or set ${ENV}=DIR") -> Path:
    """The public green agent's source file; :class:`PublicSourceMissing` naming the places tried, ``why`` it is
    needed and ``how`` to point at it (the caller's own flag)."""
    tried = []
    for c in [Path(explicit).expanduser()] if explicit else candidates(data_root):
        f = c if c.is_file() else c / GREEN_AGENT
        tried.append(str(f))
        if f.is_file():
            return f
    raise PublicSourceMissing(
        f"{why} reads the public evaluator's source, not found at {', '.join(tried[:4])}: get it with "
        f"`python scripts/download_annotations.py --out DIR` (it lands in DIR/public-evaluator) or "
        f"`git clone https://github.com/z1oong/EgoErrorVQA`, {how}")


def assigned_string(path: str | os.PathLike, name: str) -> str | None:
    """The string assigned to ``name`` at the top level of a Python file, read with ``ast`` (never executed)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    return None
