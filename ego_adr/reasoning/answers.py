"""What a method answers, and how it got there: the wire answer, the raw model text and the extraction rule.

Why: the evaluator is strict and public (a reply equals an option after the public green agent's cleaning, or it
is an error prediction that matches nothing), so turning free text into an option is part of the *method*, and
every predictions row says which rule did it (``extraction``):

* ``raw`` -- the one-pass baselines send the model's reply, stripped, as the public white agent does;
* ``strict`` -- the reply already equals an option after the public cleaning (whitespace and ``.,!?;:"`` at both
  ends, case ignored);
* ``exact`` / ``answer-cue`` / ``letter`` / ``single-mention`` / ``last-line`` -- the lenient rules of
  :func:`ego_adr.taxonomy.read_option`, in its order; ``none`` -- no rule found an option;
* ``final-line`` / ``no-final-line`` -- CoT: the option on its last ``Answer:`` line (its prompt asks for one),
  or, without such a line, the stripped reply (prose: an error prediction matching no option);
* ``keywords`` / ``no-error-keywords`` -- the shallow classifier decided (no model text to extract from).

Ego-ADR's classifier output is mapped with these rules (method side); a baseline uses them only under the
explicit option ``answers=lenient``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ego_adr.taxonomy import exact_option, read_option, strict_option


@dataclass(frozen=True)
class Answer:
    answer: str | None  # what goes on the wire
    option: str | None  # the option the strict scorer reads from ``answer`` (None: an error prediction matching none)
    extraction: str  # how ``answer`` was obtained (module docstring)


def lenient_option(text: str) -> tuple[str | None, str]:
    """The lenient reading and the name of the rule that found it (``none`` when no rule does): the strict
    reading first, then :func:`ego_adr.taxonomy.read_option` without its lone-letter rule (our prompts never
    letter the options, so "A" or "I" names none of them)."""
    hit = strict_option(text)
    if hit:
        return hit, "strict"
    return read_option(text, letters=False)


def raw_answer(text: str | None) -> Answer:
    """A baseline's answer under ``answers=raw``: the reply itself, stripped (the public white agent)."""
    if text is None:
        return Answer(None, None, "raw")
    wire = text.strip()
    return Answer(wire, strict_option(wire), "raw")


def mapped_answer(text: str | None) -> Answer:
    """A method that maps model text to an option (Ego-ADR's classifier, or a baseline under
    ``answers=lenient``): the option when a rule finds one, else the stripped reply."""
    if text is None:
        return Answer(None, None, "none")
    option, rule = lenient_option(text)
    return Answer(option if option else text.strip(), option, rule)


_FINAL_LINE = re.compile(r"^[\s*_#>`-]*(?:final\s+)?answer[\s*_`]*[:\uff1a]+[\s*_`]*(.*?)[\s*_`]*$", re.IGNORECASE)


def final_line_answer(text: str | None) -> Answer:
    """CoT's answer: the last line of the form ``Answer: <option>`` (markdown and a ``Final`` allowed), the
    option read strictly from its tail, then by exact mention; a tail naming no option is sent as it is.
    Without such a line the stripped reply is the answer (``no-final-line``)."""
    if text is None:
        return Answer(None, None, "no-final-line")
    for line in reversed([ln for ln in text.splitlines() if ln.strip()]):
        m = _FINAL_LINE.match(line)
        if m:
            tail = m.group(1).strip()
            option = strict_option(tail) or exact_option(tail)
            return Answer(option or tail, option, "final-line")
    wire = text.strip()
    return Answer(wire, strict_option(wire), "no-final-line")
