"""Markdown tables in the paper's layouts and PNG plots for multiple-choice metrics.

Table 4 of the paper has the columns Method, frames, Acc, Pre, Recall, F1 and the per-type accuracies
C, Om, UA, WA, WOb, WOr (percent, one decimal); it omits Correct wrong action, Equipment failure and Others
("all zero", Table 4 caption), which we print in a second small table (CWA, EF, Oth) rather than drop.
Tables 5 and 6 (TP/Precision/Recall/F1; Match/Narration/Precision/Recall/F1) are rendered with
:func:`render_table`. matplotlib is imported lazily (Agg backend) so the CLI starts fast.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from ego_adr.eval.scoring import PUBLIC_STRIP
from ego_adr.taxonomy import BY_OPTION, OPTIONS

MAIN_TYPES = ("correct", "Omission", "Unintended and unnecessary action", "Wrong action", "Wrong object",
              "Wrong order")  # Table 4 column order: C, Om, UA, WA, WOb, WOr
FOLDED_TYPES = ("Correct wrong action", "Equipment failure", "Others")


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a percentage with ``digits`` decimals; ``-`` for a missing value."""
    return "-" if x is None else f"{100 * x:.{digits}f}"


def _type_acc(metrics_per_type: dict, opt: str) -> float | None:
    v = metrics_per_type.get(opt)
    return v.get("accuracy") if isinstance(v, dict) else v


def render_table(rows: Sequence[dict], columns: Sequence[tuple[str, str, str | Callable | None]]) -> str:
    """A markdown table. ``columns`` = (key, header, fmt): fmt ``"pct"`` prints a fraction as a percentage,
    ``"d"`` an int, a format spec like ``".3f"`` is applied with :func:`format`, a callable is called with the
    value, ``None`` prints ``str(value)``. Missing keys and ``None`` values print as ``-``.
    """
    def cell(v, fmt):
        if v is None:
            return "-"
        if fmt == "pct":
            return pct(v)
        if callable(fmt):
            return str(fmt(v))
        if fmt:
            return format(v, fmt)
        return str(v)

    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    sep = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|"
    body = ["| " + " | ".join(cell(r.get(k), f) for k, _, f in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def _t4_row(label: str, frames, blk: dict, types: dict) -> dict:
    if isinstance(frames, int) and not isinstance(frames, bool):
        frames = f"{frames}f"
    row = {"label": label, "frames": frames if frames not in (None, "") else "-"}
    row.update({k: blk.get(k) for k in ("accuracy", "precision", "recall", "f1")})
    for opt in (*MAIN_TYPES, *FOLDED_TYPES):
        row[BY_OPTION[opt].abbrev] = _type_acc(types, opt) if types else None
    return row


def _t4_columns(first_header: str, folded: bool = False) -> list[tuple[str, str, str]]:
    cols = [("label", first_header, None), ("frames", "frames", None)]
    if not folded:
        cols += [("accuracy", "Acc", "pct"), ("precision", "Pre", "pct"), ("recall", "Recall", "pct"),
                 ("f1", "F1", "pct")]
    types = FOLDED_TYPES if folded else MAIN_TYPES
    cols += [(BY_OPTION[o].abbrev, BY_OPTION[o].abbrev, "pct") for o in types]
    return cols


def table4_rows(runs: Sequence[tuple[str, object, dict]], folded: bool = False) -> str:
    """Paper Table 4 with one row per run: ``runs`` = [(label, frames, metrics from compute_mc_metrics)].

    ``folded=True`` renders the companion table of the three types Table 4 leaves out (CWA, EF, Oth).
    """
    rows = [_t4_row(lbl, fr, m["overall"], m["per_type_accuracy"]["overall"]) for lbl, fr, m in runs]
    return render_table(rows, _t4_columns("Method", folded))


def _source_rows(metrics: dict, frames) -> list[dict]:
    pta = metrics["per_type_accuracy"]
    rows = [_t4_row(s, frames, b, pta["per_source"].get(s, {})) for s, b in metrics["per_source"].items()]
    rows.append(_t4_row("**Overall**", frames, metrics["overall"], pta["overall"]))
    rows.append(_t4_row("Simple average", frames, metrics["simple_average"], {}))
    return rows


def summary_table(metrics: dict, frames=None) -> str:
    """The per-source Table 4 block (what ``score`` prints)."""
    frames = frames if frames is not None else metrics.get("frames")
    return render_table(_source_rows(metrics, frames), _t4_columns("Source"))


def _counts_rows(metrics: dict) -> list[dict]:
    rows = [{"label": s, **b} for s, b in metrics["per_source"].items()]
    rows.append({"label": "**Overall**", **metrics["overall"]})
    return rows


def write_report(metrics: dict, out_dir: str | Path, title: str = "Multiple-choice VQA results",
                 notes: str | Sequence[str] | None = None, frames=None) -> dict[str, Path]:
    """Write ``report.md``, ``confusion_matrix.png`` and ``per_type_accuracy.png`` into ``out_dir``.

    ``metrics`` is the dict of :func:`ego_adr.eval.mc.compute_mc_metrics`; ``notes`` (a string or a list of
    paragraphs) go under the title; ``frames`` (e.g. 8 or "8f") defaults to the rows' ``frames`` field.
    Returns the written paths.
    ``metrics.json`` is written by the caller (the CLI does), so a report can be re-rendered from it.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames = frames if frames is not None else metrics.get("frames")
    srows = _source_rows(metrics, frames)
    parts = [f"# {title}", ""]
    if isinstance(notes, str):
        notes = [notes]
    for note in notes or []:
        parts += [note, ""]
    sc = metrics.get("scoring") or {}
    if sc:
        parts += [f"Scoring: **{sc.get('name')}**, the public evaluator's rule (reply stripped of whitespace and "
                  f"`{PUBLIC_STRIP}` at both ends, compared case-insensitively with the options; `correct` = no "
                  "error, any other text = an error claim credited only when it is a ground-truth option; no "
                  "answer = in n, in no cell).", ""]
    parts += ["Percentages. C..WOr: accuracy per ground-truth type (paper Table 4 columns). "
              "Simple average: unweighted mean over sources.", "",
              render_table(srows, _t4_columns("Source")), "",
              "Types Table 4 leaves out:", "", render_table(srows[:-1], _t4_columns("Source", folded=True)), "",
              "## Counts", "",
              render_table(_counts_rows(metrics),
                           [("label", "Source", None), ("n", "n", "d"), ("tp", "TP", "d"), ("fp", "FP", "d"),
                            ("tn", "TN", "d"), ("fn", "FN", "d"), ("n_unparseable", "not an option", "d"),
                            ("n_failed", "no answer", "d")]), "",
              "*not an option*: answers that are no option string -- scored as error claims, never credited.", ""]
    parts += _lenient_part(metrics) + _screen_part(metrics)
    ci = metrics.get("ci95") or {}
    if ci:
        b = metrics.get("bootstrap", {})
        ci_row = {k: f"{pct(metrics['overall'][k])} [{pct(ci[k][0])}, {pct(ci[k][1])}]" for k in ci}
        parts += [f"## 95% bootstrap intervals (overall; {b.get('n_boot', '?')} resamples, stratified, "
                  f"seed {b.get('seed', '?')})", "",
                  render_table([ci_row], [(k, k.capitalize() if k != "f1" else "F1", None) for k in ci]), ""]
        note = (metrics.get("ci95_flags") or {}).get("note")
        if note:
            parts += [f"**Flagged: {note}.**", ""]
    cot = cot_note(metrics)
    if cot:
        parts += [cot, ""]
    if metrics.get("failure_reasons"):
        parts += ["## No-answer reasons", "",
                  render_table([{"r": r, "c": c} for r, c in sorted(metrics["failure_reasons"].items())],
                               [("r", "reason", None), ("c", "samples", "d")]), ""]
    if metrics.get("n_duplicates_dropped"):
        parts += [f"{metrics['n_duplicates_dropped']} duplicate rows dropped (last answer per sample kept).", ""]
    parts += ["![confusion matrix](confusion_matrix.png)", "", "![per-type accuracy](per_type_accuracy.png)", ""]
    paths = {"report": out / "report.md"}
    paths["report"].write_text("\n".join(parts), encoding="utf-8")
    paths["confusion_matrix"] = plot_confusion(metrics["confusion_matrix"], out / "confusion_matrix.png", title)
    paths["per_type_accuracy"] = plot_per_type(metrics["per_type_accuracy"], out / "per_type_accuracy.png", title)
    return paths


def _lenient_part(metrics: dict) -> list[str]:
    """The lenient reading, labelled, below the strict table (never instead of it)."""
    len_ = metrics.get("lenient")
    if not len_:
        return []
    row = {"label": "lenient reading", **len_}
    return ["## Lenient reading (not the paper's protocol)", "",
            f"Answers read with `{len_.get('reader')}`, which finds an option inside prose. "
            f"{len_.get('n_lenient_only', 0)} answers are understood only by this reading; the strict table above "
            "is the number comparable with the paper.", "",
            render_table([row], [("label", "", None), ("accuracy", "Acc", "pct"), ("precision", "Pre", "pct"),
                                 ("recall", "Recall", "pct"), ("f1", "F1", "pct"), ("n_lenient_only",
                                                                                 "lenient-only answers", "d")]), ""]


def _screen_part(metrics: dict) -> list[str]:
    """Rows that could not be scored: how many, why, which ids."""
    out: list[str] = []
    for kind, what in (("excluded", "Excluded rows (not scored: the data is unusable)"),
                       ("unscored", "Unscored rows (no ground truth)")):
        b = metrics.get(kind) or {}
        if not b.get("n"):
            continue
        ids = ", ".join(f"`{i}`" for i in b["ids"]) + (" ..." if b.get("ids_truncated") else "")
        out += [f"## {what}: {b['n']}", "",
                render_table([{"r": r, "c": c} for r, c in b["by_reason"].items()],
                             [("r", "reason", None), ("c", "rows", "d")]), "", f"ids: {ids}", ""]
    return out


def cot_note(metrics: dict) -> str | None:
    """The table note on CoT replies without their ``Answer:`` line (metrics ``cot_no_answer_line``), or None."""
    c = metrics.get("cot_no_answer_line")
    if not c:
        return None
    per = ", ".join(f"{s} {v['n']}/{v['replies']}" for s, v in c["per_source"].items())
    return (f"CoT replies without their `Answer:` line: {c['total']} of {c['replies']} ({per}). Scored by the "
            "public rule like any reply (the whole reply is the answer: an error claim matching no option); a reply "
            "cut off by the token budget has none -- raise it with `--protocol-option max_new_tokens=N`, a "
            "deviation named in the folder and report.")


def exclusion_line(block: dict, max_ids: int = 8) -> str:
    """``3 rows (unknown ground-truth label 2, no source 1): id1, id2, id3`` for an excluded/unscored block."""
    if not block.get("n"):
        return "0 rows"
    reasons = ", ".join(f"{r} {c}" for r, c in block["by_reason"].items())
    ids = block["ids"][:max_ids]
    more = " ..." if len(block["ids"]) > max_ids or block.get("ids_truncated") else ""
    return f"{block['n']} rows ({reasons}): {', '.join(ids)}{more}"


def runtime_note(versions: dict, decoders: Sequence[str] = ()) -> str:
    """The report's runtime line: the versions that decide numbers (run.json ``versions``) and the decoders the
    rows' frames came from (``frames_info.backend``)."""
    def v(name: str) -> str:
        return versions.get(name) or "not installed"

    decoder_names = {"decord": "decord", "pyav": "av", "av": "av", "opencv": "opencv-python-headless",
                     "cv2": "opencv-python-headless"}
    used = ", ".join(f"{d} {versions.get(decoder_names.get(d, d)) or '?'}" for d in decoders) or "none"
    return (f"Runtime: transformers {v('transformers')}, torch {v('torch')}, torchvision {v('torchvision')}, "
            f"tokenizers {v('tokenizers')}, qwen-vl-utils {v('qwen-vl-utils')}, Pillow {v('pillow')}; "
            f"frames decoded by {used}.")


def write_metrics_json(metrics: dict, out_dir: str | Path) -> Path:
    p = Path(out_dir) / "metrics.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(metrics, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return p


def _plt():
    import matplotlib  # noqa: PLC0415 -- slow import, only when plotting

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def plot_confusion(cm: dict, path: str | Path, title: str = "") -> Path:
    """Heatmap of ground truth (rows) vs prediction (columns), counts written in the cells."""
    import numpy as np  # noqa: PLC0415

    plt = _plt()
    counts = np.array(cm["counts"], dtype=float)
    abbrev = {o: BY_OPTION[o].abbrev for o in OPTIONS}
    rows = [abbrev.get(c, c) for c in cm["labels"]]
    cols = [abbrev.get(c, c) for c in cm["columns"]]
    fig, ax = plt.subplots(figsize=(8, 6.5))
    # colour by row share so the rare error types are as visible as the dominant "correct" row
    share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            ax.text(j, i, str(int(counts[i, j])), ha="center", va="center", fontsize=8,
                    color="white" if share[i, j] > 0.6 else "black")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("prediction")
    ax.set_ylabel("ground truth")
    ax.set_title(f"{title}\nconfusion matrix (colour = share of the row)" if title else "confusion matrix")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_per_type(pta: dict, path: str | Path, title: str = "") -> Path:
    """Grouped bars: accuracy per ground-truth type, overall and per source (types with no samples left empty)."""
    import numpy as np  # noqa: PLC0415

    plt = _plt()
    series = {"overall": pta["overall"], **pta.get("per_source", {})}
    x = np.arange(len(OPTIONS))
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for k, (name, types) in enumerate(series.items()):
        vals = [_type_acc(types, o) for o in OPTIONS]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, [100 * v if v is not None else 0 for v in vals],
               width, label=f"{name}")
    ax.set_xticks(x, [BY_OPTION[o].abbrev for o in OPTIONS])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    ax.set_title(f"{title}\nper-type accuracy" if title else "per-type accuracy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
