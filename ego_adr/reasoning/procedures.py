"""Procedure bank: procedure text -> ordered :class:`Step`s with the objects and tools each step uses.

EgoErrorVQA gives one paragraph of procedure per task (``procedure.json``). Ego-ADR turns it into a structured
*procedure bank* (paper Section 5.2): in deep mode the VLM itself segments the paragraph into numbered steps
annotated with objects (a text-only call); in shallow mode, and whenever the model's answer cannot be parsed,
a deterministic rule-based builder splits sentences and "then / next / after that / finally" clauses.
Banks are cached per (task, builder, model) so a task's bank is built once per run.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

# Words that are never objects/tools: function words, verbs and adverbs frequent in procedures.
_NOT_OBJECT = set(
    """a an the and or of to in into on onto over under with without for from by at as about until each every
    one two three four five six seven eight nine ten half first second third next then after before finally
    also again while meanwhile separately respectively both all any some more most other another this that
    these those it its them they their your you i we is are be being been was were will would should can could
    may must do does did done not no so if when once up down out off away back well well-done same new
    add put place take pick use using used make making mix stir whisk pour cut slice chop peel mince heat cook
    microwave bake boil fry toast blend spread roll fold press open close insert attach detach install remove
    connect wire fill measure weigh grind wet rinse dry wash wipe transfer serve season sprinkle top arrange
    prepare start begin follow check turn set let keep leave repeat combine beat crack dip squeeze shine observe
    note draw bridge stand screw unscrew secure assemble disassemble spread pickup drop hold lift move lay
    cover melt brush halve grate thaw drain store sauté saute simmer coat tear
    until smooth well evenly gently thinly finely roughly lightly tightly carefully thoroughly slowly quickly
    about approximately minute minutes second seconds hour hours low medium high large small big
    tbsp tsp tablespoon tablespoons teaspoon teaspoons cup cups oz ounce ounces ml g inch inches pinch piece pieces
    step steps procedure task""".split()
)
_VERBS = """add put place take pick use mix stir whisk pour cut slice chop peel mince heat cook microwave bake boil
fry toast blend spread roll fold press open close insert attach detach install remove connect fill measure weigh
grind wet rinse wash wipe transfer serve season sprinkle top arrange prepare check turn tie combine beat crack dip
squeeze shine draw bridge stand screw secure assemble mount discard drain melt brush halve grate thaw cover
simmer coat tear set""".split()
_CLAUSE_SPLIT = re.compile(
    r"(?:;\s+|,?\s+(?:and\s+)?then\s+|\.\s+|,\s*(?=next\b|after that\b|afterwards\b|finally\b|meanwhile\b)|"
    r"\s+followed by\s+|\s+before\s+(?=\w+ing\b)|,\s+(?:and\s+)?(?=(?:" + "|".join(_VERBS) + r")\b))",
    re.IGNORECASE,
)
_LEAD_IN = re.compile(
    r"^(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|next|then|after that|afterwards|finally|lastly|meanwhile|"
    r"subsequently|also|start by|begin by|to (?:make|prepare|assemble)[^,]*,\s*(?:start by|first)?)[,:]?\s*",
    re.IGNORECASE,
)


@dataclass
class Step:
    index: int
    text: str
    objects: list[str] = field(default_factory=list)


@dataclass
class ProcedureBank:
    task_id: str
    steps: list[Step]
    builder: str  # "rule" | "model:<fingerprint>" | "yaml"
    note: str | None = None  # e.g. why a model-assisted build fell back to the rule-based bank

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.steps]

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> ProcedureBank:
        return ProcedureBank(d["task_id"], [Step(**s) for s in d["steps"]], d["builder"], d.get("note"))


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,.;:-")
    text = _LEAD_IN.sub("", text).strip(" ,.;:-")
    return text[:1].upper() + text[1:] if text else text


def split_steps(text: str) -> list[str]:
    """Split a procedure paragraph into ordered step texts (sentences, then sequencing clauses).

    Parenthesised asides are kept with their clause (they hold quantities); fragments of fewer than three words
    are merged into the previous step, since they are continuations ("and set aside") rather than steps.
    """
    text = (text or "").strip()
    if not text:
        return []
    # protect decimal points and parenthesised asides from the splitter
    asides: list[str] = []

    def _hide(m: re.Match) -> str:
        asides.append(m.group(0))
        return f"\x01{len(asides) - 1}\x01"

    parts: list[str] = []
    protected = re.sub(r"\([^()]*\)", _hide, re.sub(r"(\d)\.(\d)", r"\1<DOT>\2", text))
    for piece in _CLAUSE_SPLIT.split(protected):
        piece = re.sub(r"\x01(\d+)\x01", lambda m: asides[int(m.group(1))], piece).replace("<DOT>", ".")
        piece = _tidy(piece)
        if not piece:
            continue
        if parts and len(piece.split()) < 3:
            parts[-1] = f"{parts[-1]}, {piece[0].lower()}{piece[1:]}"
        else:
            parts.append(piece)
    return parts


def extract_objects(step_text: str) -> list[str]:
    """Content nouns of a step (heuristic: words that are not function words, verbs, adverbs or units)."""
    seen: list[str] = []
    for w in re.findall(r"[A-Za-z][A-Za-z\-]+", step_text.lower()):
        if w in _NOT_OBJECT or w.endswith(("ly", "ing", "ed")) or len(w) < 3:
            continue
        w = w[:-1] if w.endswith("s") and not w.endswith(("ss", "is", "us")) and len(w) > 3 else w
        if w not in seen:
            seen.append(w)
    return seen


def rule_based_bank(task_id: str, procedure: str) -> ProcedureBank:
    steps = [Step(i, t, extract_objects(t)) for i, t in enumerate(split_steps(procedure))]
    if not steps:
        steps = [Step(0, procedure.strip() or task_id, extract_objects(procedure or task_id))]
    return ProcedureBank(task_id, steps, "rule")


_NUMBERED = re.compile(r"^\s*(?:step\s*)?(\d{1,3})\s*[\.\):\-]\s*(.+)$", re.IGNORECASE)
_OBJECTS = re.compile(r"[\[\(]\s*(?:objects?(?:/tools?)?|tools?|items?)\s*[:=]\s*([^\]\)]*)[\]\)]", re.IGNORECASE)
_OBJECTS_TAIL = re.compile(r"\s*[\-|–—]+\s*(?:objects?(?:/tools?)?|tools?)\s*[:=]\s*(.*)$", re.IGNORECASE)


def parse_model_bank(task_id: str, text: str, builder: str, min_steps: int = 2) -> ProcedureBank | None:
    """Parse a model's numbered step list ("1. Step text [objects: a, b]"), or JSON ``[{"step", "objects"}]``.

    Returns ``None`` when fewer than ``min_steps`` steps can be read, so the caller falls back to the
    rule-based bank. Numbering must be increasing; duplicated numbers start a new list and end parsing.
    """
    if not text or not text.strip():
        return None
    bank = _parse_json_bank(task_id, text, builder)
    if bank is not None and len(bank.steps) >= min_steps:
        return bank
    steps: list[Step] = []
    last = 0
    for line in text.splitlines():
        m = _NUMBERED.match(line.strip().lstrip("*-# ").replace("**", ""))
        if not m:
            continue
        n, body = int(m.group(1)), m.group(2).strip()
        if n <= last:
            break
        last = n
        objs: list[str] = []
        om = _OBJECTS.search(body) or _OBJECTS_TAIL.search(body)
        if om:
            objs = [o.strip(" .'\"").lower() for o in re.split(r"[,;/]", om.group(1)) if o.strip(" .'\"")]
            body = (body[: om.start()] + body[om.end():]).strip()
        body = _tidy(body)
        if len(body.split()) < 2:
            continue
        steps.append(Step(len(steps), body, objs or extract_objects(body)))
    if len(steps) < min_steps:
        return None
    return ProcedureBank(task_id, steps, builder)


def _parse_json_bank(task_id: str, text: str, builder: str) -> ProcedureBank | None:
    m = re.search(r"\[\s*\{.*\}\s*\]", text, re.DOTALL)
    if not m:
        return None
    try:
        items = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    steps = []
    for it in items:
        if not isinstance(it, dict):
            return None
        body = str(it.get("step") or it.get("text") or it.get("description") or "").strip()
        if not body:
            continue
        objs = it.get("objects") or it.get("tools") or []
        objs = [str(o).lower() for o in objs] if isinstance(objs, list) else extract_objects(str(objs))
        steps.append(Step(len(steps), _tidy(body), objs))
    return ProcedureBank(task_id, steps, builder) if steps else None
