"""``report.md`` of a monitor folder and the summary table of ``--monitor all``: our rows beside the published ones,
each labelled with its step input, precision and recall in the standard order (percentages, one decimal, as the
papers print them)."""

from __future__ import annotations

from ego_adr.online_mistakes import published as pub
from ego_adr.online_mistakes.data.cut import BENCHMARKS
from ego_adr.online_mistakes.goal import agreement_text, coverage_text, partial  # noqa: F401  (re-exported)
from ego_adr.online_mistakes.registry import BLIND, REFERENCE

#: (header, metrics.json key): † at the operating point chosen for F1b, ‡ at the one chosen for macro F1
#: (:data:`ego_adr.monitoring.step_metrics.COLUMN_POINT`), the rankings threshold-free.
COLUMNS = (("P†", "mistake_precision"), ("R†", "mistake_recall"), ("F1†", "mistake_f1"),
           ("Pb†", "balanced_precision"), ("F1b†", "balanced_f1"), ("macro F1‡", "macro_f1"), ("AUROC", "auroc"),
           ("AUPRC", "auprc"))
POINT_NOTE = ("† at the operating point chosen for F1b, ‡ at the one chosen for macro F1 (each by cross-validation "
              "on the training recordings; one point for a monitor without a threshold); AUROC and AUPRC of p_error, "
              "threshold-free; [lo, hi]: 95% bootstrap over recordings (1000 resamples, seed 0)")
F1B_NOTE = ("Blind rows: flag-all scores Pb 50.0 / F1b 66.7 on any data; never-alarm scores half the correct "
            "class's F1 in macro F1 (high where mistakes are rare); position alarms from the k-th step on (both "
            "benchmarks cut each recording at its first mistake, so late steps are more often mistakes). Reference "
            "rules: unseen-step alarms on a step no training recording contains, unseen-transition on a pair "
            "(previous step, step) none contains. A row means something only above all five.")
CEILING = "position, best k on this test (ceiling: what position alone gives on this protocol; not a selection)"


def _pct(v) -> str:
    return "" if v is None else f"{100 * v:.1f}"


def _cell(m: dict, key: str) -> str:
    iv = (m.get("intervals") or {}).get(key)
    return _pct(m.get(key)) + (f" [{_pct(iv[0])}, {_pct(iv[1])}]" if iv and m.get(key) is not None else "")


def _input(stream: str) -> str:
    return pub.INPUT_NAMES.get(stream, f"file {stream}")


def table_header() -> list[str]:
    cols = " | ".join(c for c, _ in COLUMNS)
    return [f"| method | step input | {cols} |", "|---|---|" + "---:|" * len(COLUMNS)]


def ours_row(m: dict, name: str | None = None) -> str:
    cells = " | ".join(_cell(m, k) for _, k in COLUMNS)
    tag = " (privileged)" if m.get("privileged") else ""
    who = "ours, blind" if m["monitor"] in BLIND else "ours, reference" if m["monitor"] in REFERENCE else "ours"
    return f"| **{name or m['monitor']}**{tag} ({who}) | {_input(m['stream'])} | {cells} |"


def ceiling_row(c: dict) -> str:
    """``position`` with k chosen on the test itself (:func:`.monitors.baselines.position_ceiling`)."""
    cells = " | ".join(_cell(c, k) for _, k in COLUMNS)
    ks = f"k = {c['k']['balanced_f1']}†, {c['k']['macro_f1']}‡"
    return f"| *{CEILING}, {ks}* | {_input(c['stream'])} | {cells} |"


def blind_block(blind: list[dict], ceiling: dict | None, refs: list[dict] = (), agree: dict | None = None,
                of: str | None = None) -> list[str]:
    """The blind rows, position's ceiling and the reference rules, under a table header of their own; then each
    rule's alarm agreement with monitor ``of`` (``agree``: {rule: :func:`.goal.agreement`})."""
    lines = ["", "Blind baselines (they never look at which step was done) and reference rules (the training "
             "vocabulary alone, no threshold):", "", *table_header(), *map(ours_row, blind)]
    lines += ([ceiling_row(ceiling)] if ceiling else []) + list(map(ours_row, refs))
    if agree and of:
        lines += ["", f"Alarms of {of} that each reference rule also raises (‡ at its macro-F1 point, † at its F1b "
                  "point):", "", *(f"- {agreement_text(r, a)}" for r, a in agree.items())]
    return lines


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
                  "", *table_header(), *map(published_row, near)]
    if far:
        lines += ["", "Published, on other step input:", "", *table_header(), *map(published_row, far)]
    return lines


def _settings(m: dict) -> list[str]:
    sel = m.get("selection") or {}
    hp = sel.get("hyper_parameters") or sel.get("chosen") or {}  # the harness's key, or the CV monitors'
    how = sel.get("chosen_by") or sel.get("recipe") or "how chosen: not stated"
    lines = [f"- settings: {', '.join(f'{k}={v}' for k, v in hp.items()) or 'none'} ({how})"]
    if m.get("options"):
        lines.append("- options (--monitor-option): " + ", ".join(f"{k}={v}" for k, v in m["options"].items()))
    if sel.get("cv_score"):
        lines.append("- cross-validated score of the chosen settings (selection.cv_score): "
                     + ", ".join(f"{k} {v}" for k, v in sel["cv_score"].items()))
    for k, v in (sel.get("operating_points") or {}).items():
        lines.append(f"- operating point for {k}: " + ", ".join(f"{a}={b}" for a, b in v.items()))
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


def monitor_report(m: dict, rules: list[dict] = (), ceiling: dict | None = None) -> str:
    """The ``report.md`` of one monitor folder (``m``: its ``metrics.json``), beside the blind baselines and
    reference rules of the same stream (``rules``: their results), position's ceiling and each rule's alarm
    agreement with the monitor (``m["reference_agreement"]``)."""
    title = BENCHMARKS[m["benchmark"]].title
    priv = (f"yes: reads {', '.join(m['extra_reads'])} beyond the task input, reported apart" if m["privileged"]
            else "no (reads only the task input)")
    lines = [f"# {m['monitor']} on {title}, stream {m['stream']} ({coverage_text(m)})", "",
             f"- step input: {_input(m['stream'])}; {coverage_text(m)}, {m['steps']} steps, {m['mistakes']} "
             f"mistakes (the last step of each recording); source {m['stream_source']} (sha256 "
             f"{m['stream_sha256'][:12]})", *_partial_lines(m),
             f"- fitted on {m['training_sequences']} correct training sequences; privileged: {priv}",
             f"- counts at the F1b operating point: TP {m['tp']}, FP {m['fp']}, FN {m['fn']}, TN {m['tn']}; "
             f"{m['threshold_rule']}",
             *_settings(m)]
    if m.get("validation_noise"):
        lines.append("- validation episodes through the recogniser-noise channel (rates fixed in advance, never fitted "
                     "to a stream): " + ", ".join(f"{k} {v}" for k, v in m["validation_noise"].items()))
    lines += ["", f"Ours ({coverage_text(m)}):", "", *table_header(), ours_row(m)]
    others = [b for b in rules if b["monitor"] != m["monitor"]]
    if others or ceiling:
        lines += blind_block([b for b in others if b["monitor"] in BLIND], ceiling,
                             [b for b in others if b["monitor"] not in BLIND], m.get("reference_agreement"),
                             m["monitor"])
    lines += [*published_tables(m["benchmark"], m["stream"]), "", f"- {POINT_NOTE}", f"- {pub.SWAP_NOTE}",
              f"- {F1B_NOTE}", ""]
    return "\n".join(lines)


def _partial_lines(m: dict) -> list[str]:
    if not partial(m):
        return []
    un = m.get("unscored_videos") or []
    return [f"- partial stream (--partial): only {coverage_text(m)} are scored; the {len(un)} it does not cover are "
            "listed in metrics.json (unscored_videos). The published rows below score all test videos: they are "
            "printed for reference, not compared (no goal line)"]


def summary_markdown(results: list[dict], benchmark: str, stream: str, skipped: list[str], goals: list[dict],
                     selection: dict, ceiling: dict | None, agree: dict | None = None) -> str:
    """The monitor chosen without the test first, then the best on the test (named as such), every monitor's row
    (blind baselines, position's ceiling and the reference rules apart, with the rules' agreement with the chosen
    monitor; privileged ones apart), the published rows and the goal lines."""
    from ego_adr.online_mistakes.goal import goal_line, headline

    title = BENCHMARKS[benchmark].title
    cov = coverage_text(results[0]) if results else "no test videos"
    part = _partial_lines(results[0]) if results else []
    lines = [f"# {title}, stream {stream}: every monitor ({cov})", "", *part, *([""] if part else []),
             *headline(results, selection), "", *table_header()]
    lines += [ours_row(m) for m in results if not m["privileged"] and m["monitor"] not in (*BLIND, *REFERENCE)]
    lines += blind_block([m for m in results if m["monitor"] in BLIND], ceiling,
                         [m for m in results if m["monitor"] in REFERENCE], agree, selection.get("chosen"))
    priv = [m for m in results if m["privileged"]]
    if priv:
        lines += ["", f"Privileged (read more than the task input; {cov}):", "", *table_header(), *map(ours_row, priv)]
    if skipped:
        lines += ["", f"Not run: {', '.join(skipped)}."]
    lines += published_tables(benchmark, stream) + [""]
    lines += [f"- {goal_line(g)}" for g in goals]
    lines += [f"- {POINT_NOTE}", f"- {pub.SWAP_NOTE}", f"- {F1B_NOTE}", ""]
    return "\n".join(lines)
