"""The EgoErrorVQA error taxonomy: eight error types plus ``correct``.

The option strings are the exact strings the public evaluator puts on the wire and stores in
``close_end_answer`` (paper Section 4.1, Appendix D); they are never rephrased. The definitions are ours,
written from Appendix D, and are what the prompts show a model.

:func:`normalize_option` maps free model output to one option. It is deliberately conservative: an answer
that names no option, or names several conflicting ones with no way to decide, is *unparseable* (``None``),
never silently ``correct`` -- otherwise a model that rambles would be credited with true negatives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CORRECT = "correct"


@dataclass(frozen=True)
class ErrorType:
    option: str  # exact wire string
    abbrev: str  # column name in the paper's Table 4 (C, Om, UA, WA, WOb, WOr; the rest are ours)
    definition: str


TAXONOMY: tuple[ErrorType, ...] = (
    ErrorType(CORRECT, "C", "The step is carried out as the procedure asks; there is no error in this segment."),
    ErrorType(
        "Wrong object",
        "WOb",
        "The right step is attempted with the wrong thing: an incorrect tool, ingredient, material or part, "
        "equipment that is misused, or material that was prepared incorrectly beforehand.",
    ),
    ErrorType(
        "Wrong action",
        "WA",
        "The right step with the right things, but executed the wrong way: wrong manner, position or "
        "technique, a wrong measurement or quantity, wrong temperature or cooking time, or a clumsy motor "
        "error (for example while pitching a tent).",
    ),
    ErrorType(
        "Wrong order",
        "WOr",
        "A step that is correct in itself is done too early or too late relative to the procedure. A step "
        "that only goes wrong because an earlier step was out of order is also counted as wrong order.",
    ),
    ErrorType("Omission", "Om", "A required step is skipped entirely."),
    ErrorType(
        "Unintended and unnecessary action",
        "UA",
        "An extra action that the procedure does not contain or that should not happen, such as searching "
        "around for an item or doing something unrelated to the task.",
    ),
    ErrorType(
        "Correct wrong action",
        "CWA",
        "The person notices an earlier mistake and fixes it. This is acceptable behaviour but is annotated "
        "as a correction event.",
    ),
    ErrorType(
        "Equipment failure",
        "EF",
        "A tool, part or material breaks or malfunctions, even though the person did nothing wrong.",
    ),
    ErrorType("Others", "Oth", "Any other deviation that fits none of the types above, e.g. abnormally slow movement."),
)

OPTIONS: tuple[str, ...] = tuple(t.option for t in TAXONOMY)
ERROR_OPTIONS: tuple[str, ...] = tuple(o for o in OPTIONS if o != CORRECT)
BY_OPTION: dict[str, ErrorType] = {t.option: t for t in TAXONOMY}
_CANON = {o.lower(): o for o in OPTIONS}

# Phrases that mean an option. Longest phrases are tried first so that "correct wrong action" is never read as
# "correct" or "wrong action". Synonyms cover the ways VLMs and the source datasets phrase the same type.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "Correct wrong action": (
        "correct wrong action",
        "corrected wrong action",
        "correction of a wrong action",
        "corrects a wrong action",
        "self-correction",
        "self correction",
        "correction event",
    ),
    "Unintended and unnecessary action": (
        "unintended and unnecessary action",
        "unintended and unnecessary",
        "unnecessary and unintended action",
        "unintended action",
        "unnecessary action",
        "extra action",
        "additional action",
        "extra step",
        "unnecessary step",
    ),
    "Equipment failure": ("equipment failure", "equipment malfunction", "tool failure", "tool malfunction"),
    "Wrong object": ("wrong object", "wrong objects", "incorrect object", "wrong tool", "wrong ingredient",
                     "object substitution", "wrong item", "wrong part"),
    "Wrong action": ("wrong action", "incorrect action", "wrong technique", "wrong manner", "wrong measurement",
                     "measurement error", "technique error"),
    "Wrong order": ("wrong order", "incorrect order", "out of order", "wrong sequence", "order error",
                    "sequence error", "wrong step order"),
    "Omission": ("omission", "omitted", "skipped step", "missing step", "step was skipped", "skipped"),
    "Others": ("others", "other error", "other"),
    CORRECT: ("correct", "no error", "no errors", "no mistake", "no mistakes", "without error", "without errors",
              "executed correctly", "performed correctly", "done correctly"),
}
_PHRASES: list[tuple[str, str]] = sorted(
    ((p, opt) for opt, ps in _SYNONYMS.items() for p in ps), key=lambda x: -len(x[0])
)
_ANSWER_CUE = re.compile(r"(?:final answer|answer|option|error type|classification|verdict)\s*(?:is)?\s*[:\-]\s*",
                         re.IGNORECASE)
_LETTER = re.compile(r"^\s*\(?([A-Ia-i])[\).:]?\s*$")


def _clean(text: str) -> str:
    t = text.lower().replace("_", " ")
    t = re.sub(r"[*`\"'“”‘’\[\]{}<>#]", " ", t)
    return re.sub(r"\s+", " ", t).strip(" .,:;!-\n\t")


def _exact(text: str) -> str | None:
    return _CANON.get(_clean(text))


_NEGATED_BEFORE = re.compile(r"(?<![a-z])(not|no|never|nor|without|isn t|wasn t|didn t|doesn t|don t|n t)(?![a-z])")


def _mentions(text: str) -> list[tuple[int, str]]:
    """All option mentions as (position, option), longest phrase wins on overlap."""
    t = " " + _clean(text) + " "
    taken = [False] * len(t)
    found: list[tuple[int, str]] = []
    for phrase, opt in _PHRASES:
        for m in re.finditer(r"(?<![a-z])" + re.escape(phrase) + r"(?![a-z])", t):
            if any(taken[m.start():m.end()]):
                continue
            # "not correct"/"incorrect" must not count as "correct"; "it is not an omission", "did not use the
            # wrong object" name no error either (a negation at most four words back in the same clause)
            if opt == CORRECT and re.search(r"(not|isn t|is not|in)\s*$", t[max(0, m.start() - 8):m.start()]):
                continue
            if opt != CORRECT and _NEGATED_BEFORE.search(" ".join(re.split(r"[,;.]| but ", t[:m.start()])[-1]
                                                              .split()[-4:])):
                continue
            for i in range(m.start(), m.end()):
                taken[i] = True
            found.append((m.start(), opt))
    return sorted(found)


def normalize_option(text: str | None, letters: bool = True) -> str | None:
    """Map a model's answer to one of :data:`OPTIONS`, or ``None`` when it names none unambiguously.

    Order of evidence: the whole answer is an option (modulo case/punctuation); an explicit cue
    ("Answer: ...", "Error type: ...") -- the text after the *last* cue decides; a single letter A-I in the order
    of :data:`OPTIONS` (when ``letters``); otherwise the options mentioned in the prose -- if exactly one distinct
    option is mentioned it wins, if several are, the last line that names exactly one decides (CoT answers end
    with the verdict); anything else is unparseable.
    """
    if text is None:
        return None
    if not text.strip():
        return None
    hit = _exact(text)
    if hit:
        return hit
    cues = list(_ANSWER_CUE.finditer(text))
    if cues:
        tail = text[cues[-1].end():].strip().splitlines()[0] if text[cues[-1].end():].strip() else ""
        hit = _exact(tail) or _single(tail)
        if hit:
            return hit
    if letters:
        m = _LETTER.match(text)
        if m:
            return OPTIONS["abcdefghi".index(m.group(1).lower())]
    hit = _single(text)
    if hit:
        return hit
    for line in reversed([ln for ln in text.splitlines() if ln.strip()]):
        hit = _exact(line) or _single(line)
        if hit:
            return hit
        if _mentions(line):  # a line naming several options: ambiguous, stop looking further up
            break
    return None


def _single(text: str) -> str | None:
    opts = {o for _, o in _mentions(text)}
    return opts.pop() if len(opts) == 1 else None


def is_error(option: str | None) -> bool:
    """True for an error option. ``None`` (unparseable) is *not* an error option here; metrics decide."""
    return option is not None and option.lower() != CORRECT


def canonical(option: str) -> str:
    """Exact option string for a ground-truth label (case-insensitive); raises on an unknown label."""
    try:
        return _CANON[option.strip().lower()]
    except KeyError as e:
        raise ValueError(f"unknown EgoErrorVQA option {option!r}; expected one of {OPTIONS}") from e


def definitions_block(include_correct: bool = False) -> str:
    """The error-type definitions as the prompts show them (one line per type)."""
    return "\n".join(
        f"- {t.option}: {t.definition}" for t in TAXONOMY if include_correct or t.option != CORRECT
    )
