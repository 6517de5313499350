"""``report.md`` of a monitor folder and the summary table of ``--monitor all``: our rows beside the published ones,
each labelled with its step input, precision and recall in the standard order (percentages, one decimal, as the
papers print them)."""

from __future__ import annotations

from ego_adr.online_mistakes import published as pub
from ego_adr.online_mistakes.data import BENCHMARKS

COLUMNS = (("P", "mistake_precision"), ("R", "mistake_recall"), ("F1", "mistake_f1"), ("Pb", "balanced_precision"),
           ("F1b", "balanced_f1"), ("macro F1", "macro_f1"))
F1B_NOTE = ("F1b balances the classes, so a monitor that always alarms scores Pb 50.0 / F1b 66.7 on any data: read "
            "an F1b beside the flag-all row. Macro F1 (DTGL) gives always-alarming half its mistake F1.")


def _pct(v) -> str:
    return "" if v is None else f"{100 * v:.1f}"


def _input(stream: str) -> str:
    return pub.INPUT_NAMES.get(stream, f"file {stream}")


def _header() -> list[str]:
    cols = " | ".join(c for c, _ in COLUMNS)
    return [f"| method | step input | {cols} |", "|---|---|" + "---:|" * len(COLUMNS)]


def ours_row(m: dict, name: str | None = None) -> str:
    cells = " | ".join(_pct(m.get(k)) for _, k in COLUMNS)
    tag = " (privileged)" if m.get("privileged") else ""
    return f"| **{name or m['monitor']}**{tag} (ours) | {_input(m['stream'])} | {cells} |"


def published_row(r: pub.PublishedRow) -> str:
    cells = " | ".join(_pct(r.values.get(k)) for _, k in COLUMNS)
    return f"| {r.label} | {_input(r.step_input)} | {cells} |"


def published_tables(benchmark: str, stream: str) -> list[str]:
    """The published rows on the inputs comparable with ``stream``, then the rest."""
    near = [r for r in pub.rows(benchmark) if r.step_input in pub.same_family(stream)]
    far = [r for r in pub.rows(benchmark) if r not in near]
    lines = []
    if near:
        lines += ["", f"Published, on comparable step input ({', '.join(_input(s) for s in pub.same_family(stream))}):",
                  "", *_header(), *map(published_row, near)]
    if far:
        lines += ["", "Published, on other step input:", "", *_header(), *map(published_row, far)]
    return lines


def coverage_text(m: dict) -> str:
    """``n of m test videos`` (every table and report says how much of the test set a row scores)."""
    c = m.get("coverage") or {"scored": m.get("videos"), "benchmark": m.get("videos")}
    return f"{c['scored']} of {c['benchmark']} test videos"


def partial(m: dict) -> bool:
    c = m.get("coverage") or {}
    return c.get("scored", 0) < c.get("benchmark", 0)


def _settings(m: dict) -> list[str]:
    sel = m.get("selection") or {}
    hp = sel.get("hyper_parameters") or sel.get("chosen") or {}  # the harness's key, or the CV monitors'
    how = sel.get("chosen_by") or sel.get("recipe") or "how chosen: not stated"
    lines = [f"- settings: {', '.join(f'{k}={v}' for k, v in hp.items()) or 'none'} ({how})"]
    if m.get("options"):
        lines.append("- options (--monitor-option): " + ", ".join(f"{k}={v}" for k, v in m["options"].items()))
    if sel.get("cv_score"):
        lines.append("- cross-validated score of the chosen settings: "
                     + ", ".join(f"{k} {v}" for k, v in sel["cv_score"].items()))
    if sel.get("folds"):  # the whole lists are in metrics.json; here their shape
        sizes = [len(f) for f in sel["folds"]]
        lines.append(f"- cross-validation: {len(sizes)} folds over the training recordings, each fitted on {sizes} "
                     "of them and validated on the rest (the recordings of each fold are listed in metrics.json)")
    lines += [f"- deviation from the published method: {d}" for d in m.get("deviations", [])]
    lines += [f"- note: {n}" for n in (m.get("notes") or [])]
    if m.get("note"):
        lines.append(f"- note: {m['note']}")
    if m.get("stats"):
        lines.append("- " + ", ".join(f"{k} {v}" for k, v in m["stats"].items()))
    return lines


def monitor_report(m: dict) -> str:
    """The ``report.md`` of one monitor folder (``m``: its ``metrics.json``)."""
    title = BENCHMARKS[m["benchmark"]].title
    priv = (f"yes: reads {', '.join(m['extra_reads'])} beyond the task input, reported apart" if m["privileged"]
            else "no (reads only the task input)")
    lines = [f"# {m['monitor']} on {title}, stream {m['stream']} ({coverage_text(m)})", "",
             f"- step input: {_input(m['stream'])}; {coverage_text(m)}, {m['steps']} steps, {m['mistakes']} "
             f"mistakes (the last step of each recording); source {m['stream_source']} (sha256 "
             f"{m['stream_sha256'][:12]})", *_partial_lines(m),
             f"- fitted on {m['training_sequences']} correct training sequences; privileged: {priv}",
             f"- counts: TP {m['tp']}, FP {m['fp']}, FN {m['fn']}, TN {m['tn']}; {m['threshold_rule']}",
             *_settings(m), "", f"Ours ({coverage_text(m)}):", "", *_header(), ours_row(m),
             *published_tables(m["benchmark"], m["stream"]), "",
             f"- {pub.SWAP_NOTE}", f"- {F1B_NOTE}", ""]
    return "\n".join(lines)


def _partial_lines(m: dict) -> list[str]:
    if not partial(m):
        return []
    un = m.get("unscored_videos") or []
    return [f"- partial stream (--partial): only {coverage_text(m)} are scored; the {len(un)} it does not cover are "
            "listed in metrics.json (unscored_videos). The published rows below score all test videos: they are "
            "printed for reference, not compared (no goal line)"]


#: Rows that show what a metric gives away rather than detect anything: never "our best monitor" in the goal.
REFERENCE_ROWS = ("flag-all",)


def goal(results: list[dict], benchmark: str, stream: str) -> list[dict]:
    """Our best non-privileged monitor against the best published row, in macro F1 and in F1b (issue 27's goal);
    ``flag-all`` is left out (its F1b of 0.667 beats published rows without detecting anything)."""
    if any(partial(m) for m in results):  # a published row scores every test video: not comparable
        return []
    open_ = [m for m in results if not m["privileged"] and m["monitor"] not in REFERENCE_ROWS]
    chosen = validation_choice(open_)
    out = []
    for metric in ("macro_f1", "balanced_f1"):
        top = pub.best(benchmark, stream, metric)
        ours = max(open_, key=lambda m: m[metric], default=None)
        if top is None or ours is None:
            continue
        g = {"metric": metric, "ours": ours["monitor"], "ours_value": ours[metric],
             "published": top.label, "published_input": top.step_input,
             "published_value": top.values[metric], "margin": ours[metric] - top.values[metric]}
        if chosen is not None:
            g.update(chosen_on_validation=chosen["monitor"], chosen_value=chosen[metric],
                     chosen_margin=chosen[metric] - top.values[metric])
        out.append(g)
    return out


def validation_choice(results: list[dict]) -> dict | None:
    """The monitor one would pick without the test: the highest cross-validated objective among the monitors
    that report one (they share one validation construction per benchmark, :mod:`ego_adr.online_mistakes.cv`).
    "Our best" above is the best on this test, which is a choice made by looking at it; this one is not."""
    scored = [m for m in results if ((m.get("selection") or {}).get("cv_score") or {}).get("objective") is not None]
    return max(scored, key=lambda m: (m["selection"]["cv_score"]["objective"], m["monitor"]), default=None)


def summary_markdown(results: list[dict], benchmark: str, stream: str, skipped: list[str]) -> str:
    """Every monitor's row, the privileged ones apart, the published rows and the goal lines."""
    title = BENCHMARKS[benchmark].title
    cov = coverage_text(results[0]) if results else "no test videos"
    part = _partial_lines(results[0]) if results else []
    lines = [f"# {title}, stream {stream}: every monitor ({cov})", "", *part, *([""] if part else []),
             f"Ours ({cov}):", "", *_header()]
    lines += [ours_row(m) for m in results if not m["privileged"]]
    priv = [m for m in results if m["privileged"]]
    if priv:
        lines += ["", f"Privileged (read more than the task input; {cov}):", "", *_header(), *map(ours_row, priv)]
    if skipped:
        lines += ["", f"Not run: {', '.join(skipped)}."]
    lines += published_tables(benchmark, stream) + [""]
    for g in goal(results, benchmark, stream):
        verdict = "above" if g["margin"] > 0 else "below"
        lines.append(f"- goal, {g['metric']}: our best non-privileged monitor ({g['ours']}, {_pct(g['ours_value'])}) "
                     f"is {verdict} the best published row ({g['published']} on {g['published_input']}, "
                     f"{_pct(g['published_value'])}) by {abs(100 * g['margin']):.1f} points"
                     + (f"; the monitor chosen on validation alone ({g['chosen_on_validation']}) scores "
                        f"{_pct(g['chosen_value'])}, {abs(100 * g['chosen_margin']):.1f} points "
                        f"{'above' if g['chosen_margin'] > 0 else 'below'}" if "chosen_on_validation" in g else ""))
    lines += [f"- {pub.SWAP_NOTE}", f"- {F1B_NOTE}", ""]
    return "\n".join(lines)
