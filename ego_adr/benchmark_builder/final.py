"""The final set of a build folder, written from its state (``build/``) and the review decisions (``review/``):
the multiple-choice files (with the reviewed labels), the open-ended files, the agreement of the reviewers and
the dataset card. Called by ``build`` (a rebuild keeps every decision) and by ``build merge``."""

from __future__ import annotations

import json
from pathlib import Path

from ego_adr.benchmark_builder import label_review, output
from ego_adr.benchmark_builder.card import write_card
from ego_adr.benchmark_builder.merge import (
    DEFAULT_ADDER,
    final_set,
    import_sheets,
    load_store,
    reviewer_agreement,
)
from ego_adr.data.build_input import Row
from ego_adr.errors import UserError

DEFAULT_REVIEWERS = ("A", "B", "C")  # the paper's three annotators (Appendix F names them A, B, C)
ROLES = "reviewers.json"  # review/: {"reviewers": [...], "adder": "D"} (a bare list: written before the adder)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def load_state(out: Path) -> tuple[list[dict], list[dict], dict]:
    """(segments, generated, build info) of a build folder; a one-line error when it is not one."""
    bdir = Path(out) / "build"
    if not (bdir / "build.json").is_file():
        raise UserError(
            f"{out} is not a build folder (no build/build.json); run `python -m ego_adr.data build` first"
        )
    info = json.loads((bdir / "build.json").read_text(encoding="utf-8"))
    return _jsonl(bdir / "segments.jsonl"), _jsonl(bdir / "generated.jsonl"), info


def roles_of(out: Path, store: dict | None = None) -> tuple[list[str], str]:
    """(the reviewers, the adder) as ``build review`` named them; else those seen in the store, else A, B, C + D."""
    p = Path(out) / "review" / ROLES
    if p.is_file():
        data = json.loads(p.read_text(encoding="utf-8"))
        if isinstance(data, list):
            return data, DEFAULT_ADDER
        return list(data["reviewers"]), str(data.get("adder") or DEFAULT_ADDER)
    seen = [] if store is None else list(dict.fromkeys(d["reviewer"] for d in store["decisions"].values()))
    return [r for r in seen if r != DEFAULT_ADDER] or list(DEFAULT_REVIEWERS), DEFAULT_ADDER


def write_roles(out: Path, reviewers: list[str], adder: str) -> None:
    (Path(out) / "review").mkdir(parents=True, exist_ok=True)
    output.write_json(Path(out) / "review" / ROLES, {"reviewers": reviewers, "adder": adder})


def reviewers_of(out: Path, store: dict | None = None) -> list[str]:
    return roles_of(out, store)[0]


def _added_on_correct(final: dict[str, list[dict]], rows: list[tuple[str, Row]]) -> int:
    """Pairs the adder wrote about correct steps (where Section 3.3's misleading questions go)."""
    correct = {sid for sid, r in rows if r.correct}
    return sum(p["provenance"] == "human-added" for sid in correct for p in final.get(sid, []))


def finalise(out: Path, sheets: list[Path] | None = None) -> dict:
    """Import ``sheets`` (if any), then write the open-ended files, ``review/agreement.json`` and the card."""
    out = Path(out)
    segments, generated, info = load_state(out)
    problems: list[str] = []
    reviewers, adder = roles_of(out, load_store(out))
    labelled = {s["sample_id"] for s in segments if label_review.is_llm_labelled(s["row"])}
    if sheets:
        store, problems = import_sheets(out, sheets, generated, adder, labelled)
    else:
        store = load_store(out)
    final, counts = final_set(generated, store, reviewers)
    rows = label_review.final_rows([(s["sample_id"], Row(**s["row"])) for s in segments], store, reviewers)
    output.write_mc_files(out, [r for _, r in rows])
    n_pairs = output.write_open_end(out, rows, final)
    agree = reviewer_agreement(out, store, reviewers) if store["decisions"] else {"note": "not reviewed yet"}
    if store["decisions"]:
        output.write_json(out / "review" / "agreement.json", agree)
    summary = {
        "out": str(out),
        "segments": len(segments),
        "pairs_final": n_pairs,
        "counts": counts,
        "labels": label_review.counts([r for _, r in rows], store),
        "added_on_correct": _added_on_correct(final, rows),
        "reviewers": reviewers,
        "adder": adder,
        "imports": len(store["imports"]),
        "problems": problems,
        "agreement": agree,
    }
    write_card(out, info, summary, generated)
    return summary
