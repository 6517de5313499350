"""PREGO's prompt as its code builds it (aleflabo/PREGO ``step_anticipation/src/models/llama_meta.py`` at the
commit ``download`` pins, its defaults ``toy_class_context=False`` and ``prompt_context="default"``), and the
options that deviate from it, each named and recorded.

What PREGO's code sends for one step of a test recording (numeric symbols):

1. the examples: on Assembly101-O the entry of the recording's toy in
   ``data/context_prompt/supplementary/assembly_context_prompt_train_onlyToy.json`` (its default file), whose
   examples read ``Context: <toy>`` / ``Input:`` / `` -1, s1, ..., s(n-1)`` / ``Output:`` / `` sn`` / ``---``;
   a toy that file lacks (66 of the 182 test recordings: no training recording of that toy) gets the empty
   string (``except: prompt = ""``). That file holds DTGL's 135 training sequences, grouped by toy in the order
   of ``assembly_context_prompt_train.json`` (the file ``download`` fetches; measured: all 73 toys, byte for
   byte), so we rebuild it from that file and check it against the training set. On EPIC-Tent-O the examples
   are ``epictent_context_prompt_train.json``'s (``Input Sequence:`` / ``Next Symbol:``, no type line);
2. then the query: ``Sequence type: <toy>`` (``init`` of ``context_prompt.json``'s ``default``; on EPIC-Tent-O
   ``toy`` is None, so the line reads ``Sequence type: None``), ``Input Sequence:``, the prefix after ``-1``,
   ``Next Symbol:``.

The options (``--monitor-option KEY=VALUE``; PREGO's value is each default, so a default run sends PREGO's
inputs, and the same weights give the same reply):

- ``unseen_task``: ``empty`` (PREGO) or ``all`` (every training sequence as an example when the toy has none);
- ``example_labels``: ``prego`` (its file's ``Context:`` / ``Input:`` / ``Output:``) or ``query`` (the query's
  own ``Sequence type:`` / ``Input Sequence:`` / ``Next Symbol:``);
- ``task_line``: ``prego`` (``Sequence type: None`` on EPIC-Tent-O) or ``omit``;
- ``example_order``: ``prego-file`` (the order of PREGO's file, read from the data root) or ``training`` (the
  order of DTGL's ``train.json``).

One deviation has no option: on EPIC-Tent-O the examples are DTGL's 13 training sequences, since PREGO's file
holds 14 sequences none of which is one of them (another split of the recordings; scoring DTGL's test set with
examples from another split could show the model test recordings).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.online_mistakes.monitors.reference import START

PREGO_EXAMPLES = "prego/context_prompt/assembly_context_prompt_train.json"  # relative to the data root
LABELS = {"prego": ("Context:", "Input:", "Output:"), "query": ("Sequence type:", "Input Sequence:", "Next Symbol:")}
PROMPT_CHOICES = {"unseen_task": ("empty", "all"), "example_labels": ("prego", "query"),
                  "task_line": ("prego", "omit"), "example_order": ("prego-file", "training")}
PROMPT_DEFAULTS = {k: v[0] for k, v in PROMPT_CHOICES.items()}
PROMPT_HELP = {
    "unseen_task": "a toy without training sequences: empty = PREGO's empty context, all = every training sequence",
    "example_labels": "prego = its file's Context:/Input:/Output:, query = the query's own labels",
    "task_line": "EPIC-Tent-O: prego = Sequence type: None as PREGO's code writes, omit = no such line",
    "example_order": "Assembly101-O: prego-file = the order of PREGO's file, training = DTGL's train.json order",
}
PROMPT_DEVIATIONS = {
    "unseen_task": "a test recording whose toy has no training sequence gets every training sequence as examples "
                   "(PREGO's code prompts it with an empty context)",
    "example_labels": "the examples are labelled like the query, Sequence type: / Input Sequence: / Next Symbol: "
                      "(PREGO's default example file labels them Context: / Input: / Output:)",
    "task_line": "no Sequence type line on EPIC-Tent-O (PREGO's code writes Sequence type: None)",
    "example_order": "the examples in the order of DTGL's train.json (PREGO's file orders them otherwise)",
}
EPIC_EXAMPLES = ("the in-context examples are DTGL's 13 training sequences (PREGO's EPIC-Tent-O prompt file holds "
                 "14 sequences of another split)")
_EXAMPLE = re.compile(r"Sequence type: (\S+)\nInput Sequence:\n (.*)\nNext Symbol:\n (\S+)\n---\n")


def task_of(video: str) -> str | None:
    """The toy of an Assembly101 recording name (PREGO's ``get_toy``); None for a name without one."""
    parts = video.split("-")
    return parts[2].split("_")[0] if len(parts) > 2 and parts[2] else None


def line(prefix) -> str:
    return ", ".join(str(s) for s in (START, *prefix))


def deviations(benchmark: str, options: dict) -> list[str]:
    """The prompt options that differ from PREGO's code on ``benchmark``, in words (those that change nothing
    there are left out: only Assembly101-O has toys, labels and orders to differ in)."""
    epic = benchmark == "epic-tent-o"
    out = [EPIC_EXAMPLES] if epic else []
    for k, default in PROMPT_DEFAULTS.items():
        applies = (k == "task_line") == epic
        if applies and options.get(k, default) != default:
            out.append(PROMPT_DEVIATIONS[k])
    return out


def prego_order(root, videos, sequences) -> dict[str, list[tuple[int, ...]]]:
    """The training sequences per toy in the order of PREGO's file under ``root``; a file that is missing or
    holds other sequences than the training set is one :class:`UserError`."""
    path = Path(root or ".") / PREGO_EXAMPLES
    hint = "use --monitor-option example_order=training, or a data root `download` wrote"
    if root is None or not path.is_file():
        raise UserError(f"prego: PREGO's example file {path} is not there ({hint})")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        found = [(m.group(1), tuple(int(x) for x in f"{m.group(2)}, {m.group(3)}".split(", ")[1:]))
                 for entry in doc.values() for m in _EXAMPLE.finditer(entry["num"])]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UserError(f"prego: {path} is not PREGO's example file ({hint})") from None
    ours = Counter((task_of(v), tuple(s)) for v, s in zip(videos, sequences))
    if Counter(found) != ours:
        raise UserError(f"prego: {path} holds other sequences than the training set ({len(found)} examples, "
                        f"{len(ours)} training sequences; {hint})")
    out: dict[str, list[tuple[int, ...]]] = {}
    for toy, seq in found:
        out.setdefault(toy, []).append(seq)
    return out


def examples(task: str | None, seqs, labels: str) -> str:
    """The examples' text: PREGO's example block per sequence, under the toy's type line (none on EPIC-Tent-O,
    whose examples carry no toy)."""
    head, inp, out = LABELS[labels]
    type_line = f"{head} {task}\n" if task else ""
    return "".join(f"{type_line}{inp}\n {line(s[:-1])}\n{out}\n {s[-1]}\n---\n" for s in seqs if s)


def header(benchmark: str, task: str | None, options: dict) -> str:
    """The query's type line: ``Sequence type: <toy>`` always (``None`` on EPIC-Tent-O), unless left out."""
    if benchmark == "epic-tent-o" and options.get("task_line") == "omit":
        return ""
    return f"Sequence type: {task}\n"
