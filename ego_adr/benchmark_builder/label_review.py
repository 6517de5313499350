"""Reviewers check the labels the LLM gave (the labelling pass, :mod:`.labelling`; paper Section 3.3).

The sheet shows each segment's ``labels``, their ``label_provenance`` (``given``, ``mapped``, ``llm-labelled``,
``human-revised``) and the annotation's ``own_labels`` the LLM typed. On the first line of a segment with an
LLM label each reviewer may fill ``R:labels``: ``keep`` (the labels stand) or the segment's labels as they should
be (our error options, ``|``-separated). Only LLM-labelled segments take a verdict: the annotation's own labels are
changed in the annotation file, not here. Verdicts are stored per reviewer and segment (``review/decisions.json``,
key ``labels``), with the same rules as the pair decisions: importing again changes nothing, an empty cell never
erases an earlier verdict.

Final labels of a segment: the label set that more than half of the reviewers who gave a verdict named (``keep``
names the LLM's); when that set differs from the LLM's, its labels that were not the annotation's own become
``human-revised``; otherwise the LLM's labels stand (``llm-labelled``).
"""

from __future__ import annotations

from collections import Counter

from ego_adr.data.build_input import Row
from ego_adr.taxonomy import ERROR_OPTIONS, canonical

LLM, HUMAN = "llm-labelled", "human-revised"
KEEP = "keep"


def is_llm_labelled(row: dict | Row) -> bool:
    prov = row["label_provenance"] if isinstance(row, dict) else row.label_provenance
    return LLM in (prov or {}).values()


def cells(row: dict) -> dict:
    """The sheet's label cells of a segment's row (as stored in ``build/segments.jsonl``)."""
    prov = row.get("label_provenance") or {}
    return {
        "label_provenance": "|".join(f"{x}: {prov.get(x, 'given')}" for x in row["labels"]),
        "own_labels": "|".join(row.get("own_labels") or []),
    }


def parse_cell(text: str) -> list[str] | str:
    """The labels a ``R:labels`` cell names (``[KEEP]`` for keep), or the problem text."""
    t = text.strip()
    if t.lower() == KEEP:
        return [KEEP]
    out: list[str] = []
    for item in (x.strip() for x in t.split("|")):
        if not item:
            continue
        try:
            opt = canonical(item)
        except ValueError:
            return f"{item!r} is not one of our error options"
        if opt not in ERROR_OPTIONS:
            return f"{item!r}: the annotation marks this step an error; give its error type(s)"
        out += [opt] if opt not in out else []
    return out or "give keep or the error type(s), |-separated"


def import_labels(store: dict, sheet: str, rows: list[tuple[int, dict]], reviewers: list[str],
                  labelled: set[str]) -> tuple[int, list[str]]:
    """Merge one sheet's ``R:labels`` verdicts into ``store["labels"]``: (how many changed, the problem lines)."""
    verdicts = store.setdefault("labels", {})
    seen: dict[tuple[str, str], tuple[int, list[str]]] = {}
    changed, problems = 0, []
    for line, rec in rows:
        sid = (rec.get("sample_id") or "").strip()
        for r in reviewers:
            text = (rec.get(f"{r}:labels") or "").strip()
            if not text:
                continue
            got = parse_cell(text) if sid in labelled else (
                f"segment {sid!r} has the annotation's labels (change them in the annotation file)"
            )
            if isinstance(got, str):
                problems.append(f"{sheet} line {line}: {r}:labels: {got}")
                continue
            first = seen.setdefault((r, sid), (line, got))
            if first[1] != got:
                problems.append(f"{sheet} line {line}: {r}:labels differs from line {first[0]} of the same "
                                "segment; the first is kept")
                continue
            key = f"{r}\x1f{sid}"
            old = verdicts.get(key)
            if old is None or old["labels"] != got:
                verdicts[key] = {"reviewer": r, "sample_id": sid, "labels": got, "sheet": sheet, "line": line}
                changed += 1
    return changed, problems


def final_row(row: Row, verdicts: list[dict]) -> Row:
    """The row with its reviewed labels (see the module docstring); the stored row is never changed."""
    if not verdicts or not is_llm_labelled(row):
        return row
    llm = list(row.labels)
    votes = Counter(tuple(llm if v["labels"] == [KEEP] else v["labels"]) for v in verdicts)
    best, n = votes.most_common(1)[0]
    if n * 2 <= len(verdicts) or set(best) == set(llm):
        return row
    prov = {x: p for x, p in row.label_provenance.items() if p != LLM}
    return Row(**{**row.__dict__, "labels": list(best), "label_provenance": {x: prov.get(x, HUMAN) for x in best}})


def final_rows(rows: list[tuple[str, Row]], store: dict, reviewers: list[str]) -> list[tuple[str, Row]]:
    by: dict[str, list[dict]] = {}
    for v in (store.get("labels") or {}).values():
        if v["reviewer"] in reviewers:
            by.setdefault(v["sample_id"], []).append(v)
    return [(sid, final_row(r, by.get(sid, []))) for sid, r in rows]


def counts(rows: list[Row], store: dict) -> dict:
    """Labels by provenance over the final rows, and how many LLM-labelled segments got a verdict."""
    c = Counter(p for r in rows for p in (r.label_provenance or {}).values())
    reviewed = {v["sample_id"] for v in (store.get("labels") or {}).values()}
    return {**{k: c.get(k, 0) for k in ("given", "mapped", LLM, HUMAN)}, "segments_reviewed": len(reviewed)}
