"""The public evaluator's own question text, read at run time from its source, never stored in this project.

Why: the ``public`` protocol must ask exactly what the public green agent asks (its ``PROCEDURAL_ERROR_GUIDANCE``
followed by the procedure and ``Current Step: "<action_annotation as stored>"``), but that prose is not ours to
commit. It is read from a checkout of z1oong/EgoErrorVQA (``src/green_agent/agent.py``) with :mod:`ast`, so a
changed upstream text is picked up and its hash lands in every request's metadata (and so in the cache key).

Where the checkout is looked for, first found wins: the explicit path (``protocol_options`` ``public_source`` or
``$EGO_ADR_PUBLIC_EVALUATOR``), then beside the annotations (``DATA_ROOT/..``, ``DATA_ROOT/../..`` -- the
repository layout ``data/json``), then ``../shared/public-evaluator`` next to the project (tests and CI).
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

GREEN_AGENT = Path("src") / "green_agent" / "agent.py"
GUIDANCE_NAME = "PROCEDURAL_ERROR_GUIDANCE"
ENV = "EGO_ADR_PUBLIC_EVALUATOR"


class PublicSourceMissing(FileNotFoundError):
    """The public evaluator's source is needed (``--protocol public``) but was not found."""


@dataclass(frozen=True)
class PublicText:
    guidance: str
    source: str  # the file it was read from
    sha: str  # first 12 hex digits of the guidance's sha256


def candidates(data_root: str | os.PathLike | None = None, explicit: str | os.PathLike | None = None) -> list[Path]:
    out: list[Path] = []
    for given in (explicit, os.environ.get(ENV)):
        if given:
            out.append(Path(given))
    if data_root:
        root = Path(data_root).resolve()
        out += [root.parent, root.parent.parent, root / "public-evaluator", root.parent / "public-evaluator"]
    out.append(Path(__file__).resolve().parents[3] / "shared" / "public-evaluator")
    return out


def find_green_agent(data_root=None, explicit=None) -> Path:
    tried = []
    for c in [Path(explicit)] if explicit else candidates(data_root):
        f = c if c.is_file() else c / GREEN_AGENT
        tried.append(str(f))
        if f.is_file():
            return f
    raise PublicSourceMissing(
        "the public protocol reads its question text from the public evaluator's source, not found at "
        f"{', '.join(tried[:4])}: get it with `git clone https://github.com/z1oong/EgoErrorVQA` and pass "
        f"--protocol-option public_source=DIR (or set ${ENV}=DIR)"
    )


def read_public_text(data_root=None, explicit=None) -> PublicText:
    path = find_green_agent(data_root, explicit)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == GUIDANCE_NAME for t in node.targets):
            value = ast.literal_eval(node.value)
            if isinstance(value, str) and value.strip():
                return PublicText(value, str(path), hashlib.sha256(value.encode()).hexdigest()[:12])
    raise PublicSourceMissing(f"{path} has no {GUIDANCE_NAME} string: is it the EgoErrorVQA green agent?")


def public_question(guidance: str, procedure: str | None, action_annotation: object) -> str:
    """The question the white agent receives: the green agent's three blocks (:data:`prompts.PUBLIC_MC`), with
    the tag content stripped by the white agent's tag parser. ``action_annotation`` is the stored value (the
    ``None`` of a null field prints as ``None``, as the green agent's f-string prints it)."""
    from ego_adr.reasoning.prompts import PUBLIC_MC

    return PUBLIC_MC.render(guidance=guidance, procedure=procedure or "No procedure available.",
                            step=action_annotation).strip()
