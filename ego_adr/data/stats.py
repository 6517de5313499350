"""Table 2 of the paper (statistics of EgoErrorVQA) computed from any data root.

What each column counts, chosen so that the public release's ``data/json`` gives back every number the paper
prints (Section 3.1, Table 2; checked on the full release: 1000/215/182/460 multiple-choice clips, 960/215/184/446
open-ended clips, 3560 QA pairs, Q-Len 12.86, A-Len 15.57, multiple-choice A-Len 1.38):

* **Clips**: the records of the source's file for that task (one record is one sample), as the loader reads them.
* **Correct / error samples**: a record's own correctness flag (``is_error``; Assembly101 ``error_label``), and
  where a record has none, whether its ground truth is ``correct`` (the loader's ``Sample.correct``).
* **QA pairs**: open-ended: the question-answer pairs of all records; multiple choice: one per sample (the paper's
  1857 is 1000 + 215 + 182 + 460).
* **Q-Len / A-Len**: mean length in words (split on white space) over all pairs; for multiple choice the
  "answer" is each option string of a sample's ground truth, every label of a multi-label sample counted once
  (1950 labels in the release, mean 1.378 -> the paper's 1.38), and there is no question ("-").

The paper prints Q-Len/A-Len and QA pairs once per task; :func:`table2` gives them per source and per task.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from ego_adr.data.sample import MULTIPLE_CHOICE, OPEN_END, TASKS, Sample

# The paper's Table 2 (Section 3.1): (task, source) -> (clips, correct, error); per task: QA pairs, Q-Len, A-Len.
PAPER_TABLE2 = {
    (OPEN_END, "captaincook4d"): (960, 632, 328),
    (OPEN_END, "egooops"): (215, 175, 40),
    (OPEN_END, "epic_tent"): (184, 124, 60),
    (OPEN_END, "assembly101"): (446, 341, 105),
    (MULTIPLE_CHOICE, "captaincook4d"): (1000, 660, 340),
    (MULTIPLE_CHOICE, "egooops"): (215, 175, 40),
    (MULTIPLE_CHOICE, "epic_tent"): (182, 123, 59),
    (MULTIPLE_CHOICE, "assembly101"): (460, 352, 108),
}
PAPER_TASK_TOTALS = {
    OPEN_END: {"qa_pairs": 3560, "q_len": 12.86, "a_len": 15.57},
    MULTIPLE_CHOICE: {"qa_pairs": 1857, "q_len": None, "a_len": 1.38},
}


@dataclass
class Row:
    task: str
    source: str
    clips: int = 0
    correct: int = 0
    error: int = 0
    unknown: int = 0  # records whose correctness cannot be told (no flag, no valid label)
    qa_pairs: int = 0
    q_words: int = 0
    a_words: int = 0
    n_questions: int = 0
    n_answers: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def q_len(self) -> float | None:
        return self.q_words / self.n_questions if self.n_questions else None

    @property
    def a_len(self) -> float | None:
        return self.a_words / self.n_answers if self.n_answers else None

    def add(self, other: Row) -> None:
        for k in (
            "clips",
            "correct",
            "error",
            "unknown",
            "qa_pairs",
            "q_words",
            "a_words",
            "n_questions",
            "n_answers",
        ):
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        d.update(q_len=self.q_len, a_len=self.a_len)
        return d


def words(text: str) -> int:
    return len(text.split())


def count(samples: list[Sample], task: str, source: str) -> Row:
    """One row of Table 2 from the loaded samples of one task and source."""
    row = Row(task, source)
    for s in samples:
        row.clips += 1
        if s.correct is True:
            row.correct += 1
        elif s.correct is False:
            row.error += 1
        else:
            row.unknown += 1
        if task == OPEN_END:
            row.qa_pairs += len(s.qa_pairs)
            for p in s.qa_pairs:
                row.q_words += words(p.question)
                row.a_words += words(p.answer)
            row.n_questions += len(s.qa_pairs)
            row.n_answers += len(s.qa_pairs)
        else:
            row.qa_pairs += 1
            row.a_words += sum(words(label) for label in s.ground_truth)
            row.n_answers += len(s.ground_truth)
    return row


def table2(data_root: str | os.PathLike, sources=None) -> dict:
    """``{"rows": [...], "totals": {task: row}, "sources": [...], "missing": [...]}`` for a data root.

    ``sources``: the sources to count (default: the root's declared sources, else the public four); a source
    whose file for a task is absent is listed in ``missing`` for that task instead of stopping the table.
    """
    from ego_adr.data.egoerrorvqa import DataError, _requested, _root, load_samples
    from ego_adr.data.sources import get

    root = _root(data_root)
    names = _requested(sources, root)
    rows: list[Row] = []
    totals: dict[str, Row] = {}
    missing: list[str] = []
    for task in (OPEN_END, MULTIPLE_CHOICE):  # the paper's order: open-ended first
        total = Row(task, "total")
        for source in names:
            fname = get(source).files.get(task)
            if not fname or not (root / fname).is_file():
                missing.append(f"{task}/{source}")
                continue
            row = count(load_samples(data_root, task=task, sources=[source]), task, source)
            rows.append(row)
            total.add(row)
        totals[task] = total
    if not rows:
        raise DataError(f"{root} holds no annotation file of {', '.join(names)} (see --sources)")
    return {
        "data_root": str(data_root),
        "sources": names,
        "missing": missing,
        "rows": [r.to_dict() for r in rows],
        "totals": {t: r.to_dict() for t, r in totals.items()},
    }


def _fmt_len(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def format_table2(res: dict) -> str:
    """The paper's layout (Benchmark, Source, Clips, Correct, Error, Q-Len/A-Len, QA pairs), one line per source
    and a total line per task (the paper prints the last two columns once per task: the total line)."""
    from ego_adr.data.sources import get

    head = "| Benchmark | Source | Clips | Correct samples | Error samples | Q-Len / A-Len | QA pairs |"
    lines = [head, "|---|---|---:|---:|---:|---:|---:|"]
    for task in (OPEN_END, MULTIPLE_CHOICE):
        name = "Open-end" if task == OPEN_END else "Multiple-choice"
        for r in [r for r in res["rows"] if r["task"] == task] + [res["totals"][task]]:
            label = "**total**" if r["source"] == "total" else f"{get(r['source']).label} ({r['source']})"
            unknown = f" (+{r['unknown']} unknown)" if r["unknown"] else ""
            lens = f"{_fmt_len(r['q_len'])} / {_fmt_len(r['a_len'])}"
            lines.append(
                f"| {name} | {label} | {r['clips']} | {r['correct']} | {r['error']}{unknown} | {lens} | "
                f"{r['qa_pairs']} |"
            )
    if res["missing"]:
        lines.append(f"\nnot in this data root: {', '.join(res['missing'])}")
    return "\n".join(lines)


def compare_with_paper(res: dict) -> list[str]:
    """Every cell that differs from the paper's Table 2 (counts exactly, lengths at the paper's two decimals)."""
    out = []
    for r in res["rows"]:
        want = PAPER_TABLE2.get((r["task"], r["source"]))
        if want and (r["clips"], r["correct"], r["error"]) != want:
            out.append(
                f"{r['task']} {r['source']}: clips/correct/error {r['clips']}/{r['correct']}/{r['error']}, "
                f"paper {want[0]}/{want[1]}/{want[2]}"
            )
    for task, want in PAPER_TASK_TOTALS.items():
        got = res["totals"].get(task)
        if not got:
            continue
        if got["qa_pairs"] != want["qa_pairs"]:
            out.append(f"{task}: QA pairs {got['qa_pairs']}, paper {want['qa_pairs']}")
        for k in ("q_len", "a_len"):
            g = None if got[k] is None else round(got[k], 2)
            if g != want[k]:
                out.append(f"{task}: {k} {_fmt_len(got[k])}, paper {_fmt_len(want[k])}")
    return out


def shares(res: dict, task: str = MULTIPLE_CHOICE) -> dict[str, dict[str, float]]:
    """Per source of ``task``: its share of the task's clips and the share of error samples among its clips (the
    proportions Section 3.1's subsampling keeps)."""
    rows = [r for r in res["rows"] if r["task"] == task and r["clips"]]
    total = sum(r["clips"] for r in rows)
    return {r["source"]: {"clips": r["clips"] / total, "error": r["error"] / r["clips"]} for r in rows}


def paper_shares(task: str = MULTIPLE_CHOICE) -> dict[str, dict[str, float]]:
    """:func:`shares` of the paper's Table 2."""
    rows = {s: v for (t, s), v in PAPER_TABLE2.items() if t == task}
    total = sum(v[0] for v in rows.values())
    return {s: {"clips": v[0] / total, "error": v[2] / v[0]} for s, v in rows.items()}


def compare_shares(res: dict) -> list[str]:
    """One line per task and source: its shares beside the paper's, in percent (``data stats --paper``)."""
    out = []
    for task in (OPEN_END, MULTIPLE_CHOICE):
        ours, paper = shares(res, task), paper_shares(task)
        for source, sh in ours.items():
            if source in paper:
                p = paper[source]
                out.append(
                    f"{task} {source}: {100 * sh['clips']:.1f}% of the clips (paper {100 * p['clips']:.1f}%), "
                    f"{100 * sh['error']:.1f}% of them errors (paper {100 * p['error']:.1f}%)"
                )
    return out


__all__ = [
    "PAPER_TABLE2",
    "PAPER_TASK_TOTALS",
    "TASKS",
    "compare_shares",
    "compare_with_paper",
    "count",
    "format_table2",
    "paper_shares",
    "shares",
    "table2",
]
