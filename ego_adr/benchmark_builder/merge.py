"""People in the loop, second half: ``build merge DIR SHEET.csv ...`` imports reviewers' decisions and writes the
final set (paper Section 3.3, Appendix A: three annotators remove or revise generated pairs, one adds the missing).

Two roles, as in Appendix A: the reviewers (A, B, C by default) decide each generated pair, and one adder (D by
default; ``build review --adder``) adds the pairs the model did not cover, such as the deliberately misleading
questions about correct steps (Section 3.3: "a final annotator adds QA-pairs ... and introduces deliberately
misleading questions"). A reviewer's ``add`` and the adder's keep / revise / remove are reported and skipped.

Decisions (one per person and pair; columns ``R:decision``, ``R:question``, ``R:answer``, ``R:note`` of the
sheet :mod:`.review` writes): ``keep``, ``revise`` (with the new question and/or answer), ``remove`` (reviewers);
``add`` (the adder, on a new row: ``sample_id`` and the adder's question and answer). Reviewers' verdicts on the
LLM's labels (``R:labels``) are :mod:`.label_review`'s. They are kept in ``review/decisions.json``, keyed by
reviewer and pair: importing a sheet again changes nothing, an edited sheet changes only what was edited, an
empty cell never erases an earlier decision, and a sheet that lacks a reviewer's columns leaves that reviewer's
decisions as they were. Every import is logged (file, digest, what changed).

Final set, per generated pair: removed when more than half of the reviewers who decided removed it; else the
revision most reviewers gave (ties: reviewer order) with provenance ``human-revised``; else kept as ``llm``; a pair
nobody decided is kept and counted as unreviewed. Added pairs are ``human-added``. Agreement of the reviewers on
keep / revise / remove (coded 0 / 1 / 2) is computed by :func:`ego_adr.eval.agreement.agreement` (Cohen's kappa
per pair of reviewers, Fleiss' kappa) over the pairs every reviewer decided.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import time
from collections import Counter
from pathlib import Path

from ego_adr.benchmark_builder.label_review import import_labels
from ego_adr.benchmark_builder.qa import pair_id
from ego_adr.errors import UserError

DECISIONS = ("keep", "revise", "remove", "add")
DEFAULT_ADDER = "D"  # Appendix A: "a single annotator added additional QA-pairs that the model had not covered"
CODES = {"keep": 0, "revise": 1, "remove": 2}


def store_path(out: Path) -> Path:
    return out / "review" / "decisions.json"


def load_store(out: Path) -> dict:
    p = store_path(out)
    if not p.is_file():
        return {"imports": [], "decisions": {}, "labels": {}}
    return json.loads(p.read_text(encoding="utf-8"))


def _reviewers(fields: list[str]) -> list[str]:
    return [f.split(":", 1)[0] for f in fields if f.endswith(":decision")]


def _read_sheet(path: Path) -> tuple[list[str], list[tuple[int, dict]]]:
    if not path.is_file():
        raise UserError(f"review sheet {path} not found")
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            fields = list(reader.fieldnames or [])
            rows = [(reader.line_num, rec) for rec in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"cannot read review sheet {path} ({e})") from None
    reviewers = _reviewers(fields)
    if not reviewers or "pair_id" not in fields or "sample_id" not in fields:
        raise UserError(
            f"{path} is not a review sheet (needs pair_id, sample_id and R:decision columns; "
            f"write one with `build review`)"
        )
    return reviewers, rows


def _cell(rec: dict, key: str) -> str:
    return (rec.get(key) or "").strip()


def parse_decision(
    rec: dict, reviewer: str, known: dict[str, dict], segments: set[str], adder: str = DEFAULT_ADDER
) -> tuple[str, dict] | str | None:
    """(store key, decision) for one person's cells of one sheet line; a problem text; None when undecided."""
    d = _cell(rec, f"{reviewer}:decision").lower()
    if not d:
        return None
    if d not in DECISIONS:
        return f"{reviewer}:decision {d!r} is not one of {', '.join(DECISIONS)}"
    if d == "add" and reviewer != adder:
        return f"{reviewer}:decision add: only the adder ({adder}) adds pairs (Appendix A); skipped"
    if d != "add" and reviewer == adder:
        return f"{adder}:decision {d}: {adder} is the adder, who only adds pairs (Appendix A); skipped"
    pid, sid = _cell(rec, "pair_id"), _cell(rec, "sample_id")
    q, a = _cell(rec, f"{reviewer}:question"), _cell(rec, f"{reviewer}:answer")
    entry = {
        "reviewer": reviewer,
        "decision": d,
        "question": q,
        "answer": a,
        "note": _cell(rec, f"{reviewer}:note"),
    }
    if d == "add":
        if sid not in segments:
            return f"add: sample_id {sid!r} is not a segment of this build"
        if not q or not a:
            return f"add: {reviewer}:question and {reviewer}:answer are both needed"
        pid = pid if pid.startswith("h-") else pair_id(sid, q, a, prefix="h")
        entry.update(pair_id=pid, sample_id=sid)
        return f"{reviewer}\x1f{pid}", entry
    if pid not in known:
        return f"pair_id {pid!r} is not a generated pair of this build"
    if d == "revise" and not (q or a):
        return f"revise: give {reviewer}:question and/or {reviewer}:answer"
    entry.update(pair_id=pid, sample_id=known[pid]["sample_id"])
    return f"{reviewer}\x1f{pid}", entry


def import_sheets(
    out: Path, sheets: list[Path], generated: list[dict], adder: str = DEFAULT_ADDER, labelled: set | None = None
) -> tuple[dict, list[str]]:
    """Merge the sheets' decisions into the store (see module docstring); the store and every problem line.
    ``labelled``: the segments with an LLM label (the ones that take ``R:labels`` verdicts)."""
    store = load_store(out)
    known = {p["id"]: {**p, "sample_id": g["sample_id"]} for g in generated for p in g["pairs"]}
    segments = {g["sample_id"] for g in generated}
    problems: list[str] = []
    for sheet in sheets:
        digest = hashlib.sha256(sheet.read_bytes()).hexdigest()[:16] if sheet.is_file() else ""
        reviewers, rows = _read_sheet(sheet)
        changed = 0
        for line, rec in rows:
            for r in reviewers:
                got = parse_decision(rec, r, known, segments, adder)
                if isinstance(got, str):
                    problems.append(f"{sheet.name} line {line}: {got}")
                elif got is not None:
                    key, entry = got
                    old = store["decisions"].get(key)
                    if old is not None and old["decision"] == entry["decision"]:
                        for k in (
                            "question",
                            "answer",
                            "note",
                        ):  # an empty cell never erases what was written
                            entry[k] = entry[k] or old.get(k, "")
                    if old is None or {k: old.get(k) for k in entry} != entry:
                        store["decisions"][key] = {**entry, "sheet": sheet.name, "line": line}
                        changed += 1
        n_labels, found = import_labels(store, sheet.name, rows, [r for r in reviewers if r != adder],
                                        labelled or set())
        problems += found
        store["imports"].append(
            {
                "sheet": str(sheet),
                "sha256": digest,
                "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "reviewers": reviewers,
                "changed": changed + n_labels,
            }
        )
    store_path(out).parent.mkdir(parents=True, exist_ok=True)
    store_path(out).write_text(json.dumps(store, ensure_ascii=False, indent=1), encoding="utf-8")
    return store, problems


def _final_one(pair: dict, decided: list[dict]) -> tuple[dict | None, str]:
    if not decided:
        return {**pair, "review": "unreviewed"}, "unreviewed"
    votes = Counter(d["decision"] for d in decided)
    if votes["remove"] * 2 > len(decided):
        return None, "removed"
    revisions = [
        (d["question"] or pair["question"], d["answer"] or pair["answer"])
        for d in decided
        if d["decision"] == "revise"
    ]
    if revisions:
        best = Counter(revisions).most_common(1)[0][1]
        q, a = next(r for r in revisions if revisions.count(r) == best)
        if (q, a) != (pair["question"], pair["answer"]):
            return {
                **pair,
                "question": q,
                "answer": a,
                "provenance": "human-revised",
                "llm_question": pair["question"],
                "llm_answer": pair["answer"],
                "review": "revised",
            }, "revised"
    return {**pair, "review": "kept"}, "kept"


def final_set(generated: list[dict], store: dict, reviewers: list[str]) -> tuple[dict[str, list[dict]], dict]:
    """sample id -> final pairs, and the counts for the card (paper Figure 2e)."""
    by_pair: dict[str, list[dict]] = {}
    for d in store["decisions"].values():
        by_pair.setdefault(d["pair_id"], []).append(d)
    order = {r: i for i, r in enumerate(reviewers)}
    final: dict[str, list[dict]] = {}
    counts: Counter = Counter()
    for g in generated:
        for p in g["pairs"]:
            counts["llm_made"] += 1
            decided = sorted(
                (d for d in by_pair.get(p["id"], []) if d["decision"] in CODES),
                key=lambda d: order.get(d["reviewer"], len(order)),
            )
            kept, status = _final_one(p, decided)
            counts[status] += 1
            if kept is not None:
                final.setdefault(g["sample_id"], []).append(kept)
    for d in sorted(store["decisions"].values(), key=lambda d: d["pair_id"]):
        if d["decision"] == "add":
            final.setdefault(d["sample_id"], []).append(
                {
                    "id": d["pair_id"],
                    "question": d["question"],
                    "answer": d["answer"],
                    "provenance": "human-added",
                    "added_by": d["reviewer"],
                    "review": "added",
                }
            )
            counts["added"] += 1
    counts["final"] = sum(len(v) for v in final.values())
    return final, dict(counts)


def _clean(v):
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def reviewer_agreement(out: Path, store: dict, reviewers: list[str]) -> dict:
    """``eval agreement`` on the keep / revise / remove codes of the pairs every reviewer decided."""
    from ego_adr.eval.agreement import agreement

    codes: dict[str, dict[str, int]] = {}
    for d in store["decisions"].values():
        if d["decision"] in CODES and d["reviewer"] in reviewers:
            codes.setdefault(d["pair_id"], {})[d["reviewer"]] = CODES[d["decision"]]
    full = {pid: c for pid, c in codes.items() if all(r in c for r in reviewers)}
    if len(reviewers) < 2 or len(full) < 2:
        return {"n_items": len(full), "note": "fewer than two reviewers or two pairs decided by all of them"}
    path = out / "review" / "agreement.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["pair_id", *reviewers])
        for pid, c in sorted(full.items()):
            w.writerow([pid, *[c[r] for r in reviewers]])
    try:
        res = agreement(path, humans=reviewers, id_column="pair_id")
    except ValueError as e:
        return {"n_items": len(full), "note": str(e)}
    return _clean(
        {
            "n_items": res["n_items"],
            "pairwise_cohen_kappa": {k: v["cohen_kappa"] for k, v in res["pairwise"].items()},
            "mean_cohen_kappa": res["mean_cohen_kappa"],
            "fleiss_kappa": res.get("fleiss_kappa"),
            "codes": CODES,
        }
    )
