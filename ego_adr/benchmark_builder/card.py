"""The dataset card (``README.md`` in the built folder): how it was built, by which model, how many pairs the LLM
made and how many people kept, revised, removed and added (the paper's Figure 2e: LLM-generated vs human-added
pairs of the final set; 2,749 vs 811 in EgoErrorVQA, Section 3.3), and its Table 2."""

from __future__ import annotations

import json
from pathlib import Path


def _table2(out: Path) -> str:
    from ego_adr.data.stats import format_table2, table2

    try:
        return format_table2(table2(out))
    except Exception as e:  # noqa: BLE001 - the card is written even when the table cannot be
        return f"(Table 2 not available: {e})"


def _share(counts: dict) -> str:
    llm = counts.get("final", 0) - counts.get("added", 0)
    total = counts.get("final", 0)
    if not total:
        return "no pairs in the final set"
    return (
        f"{llm} LLM-generated ({100 * llm / total:.1f} %) and {counts.get('added', 0)} human-added "
        f"({100 * counts.get('added', 0) / total:.1f} %) of {total} final pairs"
    )


def _options(out: Path, ident: dict, summary: dict) -> list[str]:
    """The card's lines for the build's options (Section 3.1 subsample, 3.3 labels and misleading questions)."""
    opt = ident.get("options") or {}
    lab = summary.get("labels") or {}
    sub = out / "build" / "subsample.json"
    lines = []
    if opt.get("subsample") is not None and sub.is_file():
        d = json.loads(sub.read_text(encoding="utf-8"))
        lines.append(
            f"- subsample (Section 3.1): {d['kept']} of {d['rows']} segments, proportionally per source and "
            f"correct/error (largest remainder), seed {d['seed']} (`build/subsample.json`)"
        )
    if opt.get("llm_labels", False):
        lines.append(
            f"- labels (Section 3.3): {lab.get('given', 0)} given, {lab.get('mapped', 0)} mapped, "
            f"{lab.get('llm-labelled', 0)} typed by the model (`llm-labelled`), {lab.get('human-revised', 0)} "
            f"revised by reviewers ({lab.get('segments_reviewed', 0)} segments reviewed; `build/labels.jsonl`)"
        )
    else:
        lines.append("- labels: the annotation's only (`--no-llm-labels`: rows without one were left out)")
    if opt.get("llm_misleading"):
        lines.append(
            "- misleading questions about correct steps: **written by the model** (`--llm-misleading`, a "
            "deviation: in the paper the final annotator writes them, Section 3.3)"
        )
    else:
        lines.append(
            f"- misleading questions about correct steps: the adder's (Section 3.3); "
            f"{summary.get('added_on_correct', 0)} pairs added on correct steps"
        )
    return lines


def write_card(out: Path, info: dict, summary: dict, generated: list[dict]) -> Path:
    c, ident = summary["counts"], info["identity"]
    procs = json.loads((out / "build" / "procedures.json").read_text(encoding="utf-8"))
    methods = {m: sum(p["method"] == m for p in procs.values()) for m in ("given", "llm", "rule")}
    failed = sum(1 for g in generated if g["failure"])
    outages = sum(1 for g in generated if g["failure_kind"] == "infrastructure")
    status = (
        "reviewed" if summary["imports"] else "not reviewed yet: the open-ended pairs are the LLM's drafts"
    )
    agree = summary.get("agreement") or {}
    kappa = agree.get("fleiss_kappa")
    lines = [
        f"# {out.name}",
        "",
        "An EgoErrorVQA-style benchmark built with `python -m ego_adr.data build` (paper Section 3.3, Appendix A).",
        f"Status: **{status}**.",
        "",
        "## How it was built",
        "",
        f"- annotations: {summary['segments']} step segments (annotation file sha256 {ident['annotations']}; "
        f"bad rows are listed in `build/issues.txt`)",
        f"- model: `{info.get('model_id')}` (fingerprint `{info.get('model_fingerprint')}`), text only, "
        f"generation {json.dumps(ident['generation'])} (Appendix A: greedy, 300 new tokens)",
        f"- prompts: {', '.join(f'{k} v{v}' for k, v in ident['prompts'].items())} (`ego_adr/reasoning/prompts.py`)",
        f"- procedures: {methods['llm']} condensed by the model, {methods['rule']} by the rule fallback, "
        f"{methods['given']} given (`build/procedures.json` says which and why)",
        f"- segments without generated pairs: {failed} ({outages} for an outage: rerun the build)",
        *_options(out, ident, summary),
        "",
        "## QA pairs (Figure 2e)",
        "",
        "| LLM-made | kept | revised | removed | unreviewed | human-added | final |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {c.get('llm_made', 0)} | {c.get('kept', 0)} | {c.get('revised', 0)} | {c.get('removed', 0)} | "
        f"{c.get('unreviewed', 0)} | {c.get('added', 0)} | {c.get('final', 0)} |",
        "",
        f"Final set: {_share(c)}.",
        f"Reviewers: {', '.join(summary['reviewers'])}; adder: {summary.get('adder', '-')}; imports: "
        f"{summary['imports']}; agreement on keep / revise / remove: Fleiss' kappa "
        f"{'-' if kappa is None else f'{kappa:.3f}'} over {agree.get('n_items', 0)} pairs "
        "(`review/agreement.json`).",
        "",
        "## Table 2",
        "",
        _table2(out),
        "",
        "## Use",
        "",
        "```bash",
        f"python -m ego_adr.run --data-root {out} --video-root VIDEOS",
        f"python -m ego_adr.data stats --data-root {out}",
        "```",
        "",
    ]
    path = out / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
