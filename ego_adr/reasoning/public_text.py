"""The public evaluator's own question text, read at run time from its source, never stored in this project.

Why: the ``public`` protocol must ask exactly what the public green agent asks (its ``PROCEDURAL_ERROR_GUIDANCE``
followed by the procedure and ``Current Step: "<action_annotation as stored>"``), but that prose is not ours to
commit. It is read from a checkout of z1oong/EgoErrorVQA (``src/green_agent/agent.py``) with :mod:`ast`, so a
changed upstream text is picked up and its hash lands in every request's metadata (and so in the cache key).

Where the checkout is looked for: :mod:`ego_adr.data.public_source` (``protocol_options`` ``public_source`` is
the explicit path).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ego_adr.data.public_source import ENV, GREEN_AGENT, PublicSourceMissing, assigned_string, candidates  # noqa: F401 (re-exported)
from ego_adr.data.public_source import find_green_agent as find_public

GUIDANCE_NAME = "PROCEDURAL_ERROR_GUIDANCE"


@dataclass(frozen=True)
class PublicText:
    guidance: str
    source: str  # the file it was read from
    sha: str  # first 12 hex digits of the guidance's sha256


def find_green_agent(data_root=None, explicit=None) -> Path:
    return find_public(data_root, explicit, why="--protocol public",
                       how="then pass --protocol-option public_source=DIR (or set $EGO_ADR_PUBLIC_EVALUATOR=DIR)")


def read_public_text(data_root=None, explicit=None) -> PublicText:
    path = find_green_agent(data_root, explicit)
    value = assigned_string(path, GUIDANCE_NAME)
    if not (value or "").strip():
        raise PublicSourceMissing(f"{path} has no {GUIDANCE_NAME} string: is it the EgoErrorVQA green agent?")
    return PublicText(value, str(path), hashlib.sha256(value.encode()).hexdigest()[:12])


def public_question(guidance: str, procedure: str | None, action_annotation: object) -> str:
    """The question the white agent receives: the green agent's three blocks (:data:`prompts.PUBLIC_MC`), with
    the tag content stripped by the white agent's tag parser. ``action_annotation`` is the stored value (the
    ``None`` of a null field prints as ``None``, as the green agent's f-string prints it)."""
    from ego_adr.reasoning.prompts import PUBLIC_MC

    return PUBLIC_MC.render(guidance=guidance, procedure=procedure or "No procedure available.",
                            step=action_annotation).strip()


def public_cot_question(guidance: str, procedure: str | None, action_annotation: object) -> str:
    """CoT's question under ``question=public`` (:data:`prompts.PUBLIC_COT`): the public guidance up to its
    ``Instructions:`` block (the error types and their definitions, as read at run time), the procedure and step
    as the green agent prints them, then our CoT instruction instead of "output ONLY one option"."""
    from ego_adr.reasoning.prompts import OPTION_LIST, PUBLIC_COT

    head = guidance.split("\nInstructions:", 1)[0].rstrip()
    return PUBLIC_COT.render(definitions=head.strip(), procedure=procedure or "No procedure available.",
                             step=action_annotation, options=OPTION_LIST).strip()
