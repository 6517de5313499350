"""The final set of a build folder, written from its state (``build/``) and the review decisions (``review/``):
the open-ended files, the agreement of the reviewers and the dataset card. Called by ``build`` (a rebuild keeps
every decision) and by ``build merge``."""

from __future__ import annotations

import json
from pathlib import Path

from ego_adr.build import output
from ego_adr.build.card import write_card
from ego_adr.build.merge import final_set, import_sheets, load_store, reviewer_agreement
from ego_adr.data.build_input import Row
from ego_adr.errors import UserError

DEFAULT_REVIEWERS = ("A", "B", "C")  # the paper's three annotators (Appendix F names them A, B, C)


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


def reviewers_of(out: Path, store: dict | None = None) -> list[str]:
    p = Path(out) / "review" / "reviewers.json"
    if p.is_file():
        return json.loads(p.read_text(encoding="utf-8"))
    seen = [] if store is None else list(dict.fromkeys(d["reviewer"] for d in store["decisions"].values()))
    return seen or list(DEFAULT_REVIEWERS)


def finalise(out: Path, sheets: list[Path] | None = None) -> dict:
    """Import ``sheets`` (if any), then write the open-ended files, ``review/agreement.json`` and the card."""
    out = Path(out)
    segments, generated, info = load_state(out)
    problems: list[str] = []
    if sheets:
        store, problems = import_sheets(out, sheets, generated)
    else:
        store = load_store(out)
    reviewers = reviewers_of(out, store)
    final, counts = final_set(generated, store, reviewers)
    rows = [(s["sample_id"], Row(**s["row"])) for s in segments]
    n_pairs = output.write_open_end(out, rows, final)
    agree = reviewer_agreement(out, store, reviewers) if store["decisions"] else {"note": "not reviewed yet"}
    if store["decisions"]:
        output.write_json(out / "review" / "agreement.json", agree)
    summary = {
        "out": str(out),
        "segments": len(segments),
        "pairs_final": n_pairs,
        "counts": counts,
        "reviewers": reviewers,
        "imports": len(store["imports"]),
        "problems": problems,
        "agreement": agree,
    }
    write_card(out, info, summary, generated)
    return summary
