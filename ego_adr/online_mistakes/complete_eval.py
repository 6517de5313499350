"""``python -m ego_adr.monitoring evaluate --benchmark assembly101-complete|epic-tent-complete``: one monitor (or
``all``) over every step of every test recording (:mod:`.data.complete`).

Each monitor is built from the step-stream registry and fitted once on the cut benchmark's training set, exactly as
for Assembly101-O / EPIC-Tent-O, then fed every complete test recording one step at a time through
:func:`ego_adr.monitoring.monitor.run_episode`; it keeps going after an alarm (the person goes on), so every
step gets its own verdict. The same fitted monitor is also fed the cut benchmark's ``oracle`` stream, and its cut
row (the per-step metrics and AUROC there) is kept beside the complete one: how much of a cut-protocol score its
position explained shows in one table.

Order of work, so that bad input never leaves anything in ``--out``: the flags (as the cut command checks them),
the stream file's syntax, the data root and its source files (labels, intervals, the stream's lengths), the model
when one is needed; only then the output folder is claimed and written (:class:`ego_adr.folders.OutputFolder`).

Every monitor is built and fitted by :func:`ego_adr.online_mistakes.fitting.fitted` on the training set
:func:`~ego_adr.online_mistakes.fitting.configured` for the complete stream (``oracle``: the annotated steps, as the
cut benchmark's ``oracle``; a file: a recogniser's steps, with the recogniser-noise channel in validation), so
``dtgl-do`` trains DTGL's DO* config on the oracle steps here as on the cut benchmark.

The monitor chosen without the test (:func:`chosen_without_test`) is the cut benchmark's choice on the same training
set: the nested selection over the outer-fold seeds (:mod:`.selection`), whose folds are kept under the cache root
(``online_mistakes/selection-folds/<key>.json``, the key covering the fold's recordings and validation episodes,
the monitor and its options, this code and the library versions), so they are paid once per training set, not once
per run; ``summary.json``'s ``selection.fold_cache`` says how many were read. With ``--monitor all`` the fits (each
monitor's and the selection's) run on ``--jobs`` processes (:mod:`.workers`).

A monitor folder holds ``steps.jsonl`` (per step: the monitoring layer's fields, ``episode`` the video and the
recording's truth included, then ``video``, ``step_id``, ``step_name``, ``source_label`` (correct, mistake,
correction), ``kinds``, ``scored`` and, where a monitor has one per metric, ``flagged_for``), ``metrics.json`` (:func:`.complete_metrics.complete_metrics`, the ``cut`` row, the
monitor's selection, the benchmark's rules and options) and ``report.md``; ``--monitor all`` adds
``summary.json`` (a row per monitor, each with its ``cut`` row; ``goal``) and ``summary.md``.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.folders import OutputFolder
from ego_adr.models.compat import runtime_versions
from ego_adr.monitoring.monitor import run_episode
from ego_adr.monitoring.numerics import stable
from ego_adr.monitoring.per_step import step_row
from ego_adr.online_mistakes import complete_metrics as CM
from ego_adr.online_mistakes import complete_report as CR
from ego_adr.online_mistakes import evaluate as E
from ego_adr.online_mistakes.data import complete as C
from ego_adr.online_mistakes.data import cut as D
from ego_adr.online_mistakes.fitting import THRESHOLD, configured, feed, fitted, write_folder
from ego_adr.online_mistakes.registry import REGISTRY, not_runnable
from ego_adr.online_mistakes.types import StepContext
from ego_adr.store import write_json, write_text

COMPLETE_VERSION = "3"  # bump when what a complete-trial folder holds changes
RESULT_FILES = ("steps.jsonl", "metrics.json", "report.md")


def _truth(rec: C.CompleteRecording) -> dict:
    """What is true of a recording, in the layer's per-step fields: errorful, its first (scored) mistake, the kinds
    of its mistakes, the first one's kind."""
    first = next((i for i, (y, sc) in enumerate(zip(rec.labels, rec.scored)) if y and sc), None)
    kinds = sorted({k for ks, y, sc in zip(rec.kinds, rec.labels, rec.scored) if y and sc for k in ks})
    return {"errorful": first is not None, "error_onset": first, "error_types": kinds,
            "primary_type": rec.kinds[first][0] if first is not None and rec.kinds[first] else None}


def rows_of(monitor, stream: C.CompleteStream) -> list[dict]:
    """Every complete recording through the fitted ``monitor``, one step at a time; the per-step rows: the
    monitoring layer's (:func:`ego_adr.monitoring.per_step.step_row`, ``episode`` the video) plus the fields of
    this benchmark."""
    rows = []
    for rec in stream.recordings:
        ctx = StepContext(stream.benchmark, rec.video, stream.taxonomy)
        outs = run_episode(monitor, rec.video, ctx, iter(rec.steps))
        truth = _truth(rec)
        for t, out in enumerate(outs):
            flagged = bool(out.prob >= THRESHOLD) if out.flagged is None else bool(out.flagged)
            per = {k: bool(v) for k, v in (getattr(out, "flagged_for", None) or {}).items()}  # issue 34's points
            row = step_row(rec.video, t, rec.labels[t], stable(out.prob), truth, flagged=flagged, category=out.category,
                           onset=out.onset, evidence=out.evidence)
            rows.append(row | {"step_id": rec.steps[t], "step_name": rec.names[t],
                               "source_label": rec.source_labels[t], "kinds": list(rec.kinds[t]),
                               "scored": rec.scored[t], **({"flagged_for": per} if per else {})})
    return rows


def _kwargs(a, name: str, model) -> dict:
    """What the cut command hands a monitor: the data root, its resolved ``--monitor-option``s, the model."""
    options = (getattr(a, "options", None) or {}).get(name, {})
    return {"data_root": a.data_root, **options, **({"model": model} if REGISTRY.get(name).needs_model else {})}


def result(a, name: str, train, stream: C.CompleteStream, rows: list[dict], cut_rows: list[dict], monitor,
           extra: dict) -> dict:
    """``metrics.json`` of one monitor on a complete-trial benchmark."""
    spec = REGISTRY.get(name)
    cut = CM.step_block(cut_rows) | {"benchmark": C.spec(a.benchmark).cut, "stream": "oracle",
                                     "steps": len(cut_rows), "mistakes": sum(r["label"] for r in cut_rows)}
    return {
        "benchmark": stream.benchmark, "stream": stream.name, "stream_source": stream.source,
        "stream_sha256": stream.sha256, "monitor": name, "privileged": REGISTRY.privileged(spec),
        "reads": list(spec.reads), "extra_reads": list(REGISTRY.extra_reads(spec)),
        **CM.complete_metrics(rows), "cut": cut,
        "videos": len(stream.recordings), "corrections": stream.corrections,
        "extra_steps": {str(k): v for k, v in stream.extra_steps.items()},
        "training_sequences": len(train.sequences), "training_benchmark": train.benchmark, **extra,
        "steps_kind": train.steps, "validation_noise": dict(train.noise),
        "threshold_rule": f"the monitor's own flag; where it sets none, p_error >= {THRESHOLD}",
        "selection": getattr(monitor, "selection", None) or {"hyper_parameters": {}, "chosen_by": "not stated"},
        "deviations": list(getattr(monitor, "deviations", [])), "note": getattr(monitor, "note", None),
        "notes": list(stream.notes), "extra_videos": list(stream.extra_videos),
        "harness_version": COMPLETE_VERSION, "versions": runtime_versions(),
    }


def _identity(a, train, stream: C.CompleteStream, fingerprint: dict, monitor) -> dict:
    ident = {"command": "monitoring evaluate", "benchmark": a.benchmark, "stream": stream.name,
             "stream_sha256": stream.sha256, "corrections": stream.corrections,
             **{f"{k}_sha256": v for k, v in fingerprint.items()}, "harness_version": COMPLETE_VERSION,
             "validation_noise": dict(train.noise)}
    ident["monitor" if isinstance(monitor, str) else "monitors"] = monitor
    if isinstance(monitor, str):
        ident.update({f"option.{k}": v for k, v in (getattr(a, "options", None) or {}).get(monitor, {}).items()})
    else:
        ident["selection_seeds"] = list(a.seeds)
    names = [monitor] if isinstance(monitor, str) else monitor
    if any(REGISTRY.get(m).needs_model for m in names):
        ident.update({k: getattr(a, k, None) for k in E.MODEL_KEYS})
        ident.update(getattr(a, "prego_settings", None) or {})
    return ident


def _one(a, name, train, stream, cut, out: Path, ident: dict, model, extra: dict) -> dict:
    with OutputFolder(out, ident, "--out", RESULT_FILES):
        t0 = time.perf_counter()
        monitor = fitted(name, train, **_kwargs(a, name, model))
        rows = rows_of(monitor, stream)
        cut_rows = feed(monitor, train, cut)
        res = result(a, name, train, stream, rows, cut_rows, monitor, extra)
        res["seconds"] = round(time.perf_counter() - t0, 3)
        write_folder(out, rows, res, CR.monitor_report(res), getattr(monitor, "files", None))
    return res


def _said(a, res: dict, out: Path) -> dict:
    if not getattr(a, "quiet", False):
        print(f"{res['monitor']:<18} macro F1 {res['macro_f1']:.3f} (cut {res['cut']['macro_f1']:.3f})  AUROC "
              f"{res['auroc']:.3f} (cut {res['cut']['auroc']:.3f})  -> {out}")
    return res


def _group(a, group: list[str], train, stream, cut, out: Path, idents: dict, extra: dict) -> list[dict]:
    """A :mod:`.workers` task: the monitors of one group (they share fits in this process), each into its folder."""
    return [_one(a, n, train, stream, cut, out / n, idents[n], None, extra) for n in group]


def _run_all(a, names: list[str], train, stream, cut, out: Path, fingerprint: dict, model, extra):
    """Every monitor of ``names`` into ``out/<monitor>/`` and the cut benchmarks' nested selection on the same
    training set, as the cut command runs them (:func:`ego_adr.online_mistakes.evaluate`'s ``--jobs``): the
    monitors that need no model and the selection's fits (unless cached) on worker processes, the others here."""
    from ego_adr.online_mistakes import selection, workers

    idents = {n: _identity(a, train, stream, fingerprint, n) for n in names}
    by, sel = selection.run_beside(
        train, names, getattr(a, "options", None) or {}, a.jobs,
        lambda n: _one(a, n, train, stream, cut, out / n, idents[n], model, extra),
        lambda g: (_group, (workers.plain(a), g, train, stream, cut, out, idents, extra)), a.seeds)
    return [_said(a, by[n], out / n) for n in names], sel


def _checked_flags(a) -> list[str]:
    """The cut command's checks of the flags, read with the cut benchmark's name."""
    sp = C.spec(a.benchmark)
    cut_args = copy.copy(a)
    cut_args.benchmark = sp.cut
    names = E._check_flags(cut_args)
    a.prego_settings = getattr(cut_args, "prego_settings", None)
    a.options = getattr(cut_args, "options", {})
    a.jobs, a.seeds, a.monitor = cut_args.jobs, cut_args.seeds, cut_args.monitor
    if a.stream != "oracle" and (a.stream in D.STREAMS or not Path(a.stream).is_file()):
        raise UserError(f"--stream {a.stream!r}: {a.benchmark} takes oracle or a predictions file covering whole "
                        f"recordings ({', '.join(s for s in D.STREAMS if s != 'oracle')} hold only the cut sequences)")
    return names


def evaluate_complete(a) -> int:
    names = _checked_flags(a)
    corrections = getattr(a, "corrections", None) or "correct"
    parsed = None if a.stream == "oracle" else D.parse_predictions(a.stream)
    stream = C.load_stream(a.data_root, a.benchmark, a.stream, corrections, parsed)
    train = configured(C.training(a.data_root, a.benchmark), stream.name)  # every fit of the run gets the stream's
    cut = D.load_stream(a.data_root, C.spec(a.benchmark).cut, "oracle")
    fingerprint = C.fingerprint(a.data_root, a.benchmark)
    extra = {"training_steps_by_source_label": C.training_errors(a.data_root, a.benchmark)}
    why = not_runnable(a.monitor, names, bool(a.model))
    skipped = list(why)
    names = [n for n in names if n not in why]
    E.check_inputs(a, names, train)
    model = E._model(a) if any(REGISTRY.get(n).needs_model for n in names) else None
    for note in stream.notes:
        print(f"note: {note}")
    out = Path(a.out)
    if a.monitor != "all":
        _said(a, _one(a, names[0], train, stream, cut, out, _identity(a, train, stream, fingerprint, names[0]), model,
                      extra), out)
        return 0
    with OutputFolder(out, _identity(a, train, stream, fingerprint, names), "--out", ("summary.json",)):
        results, how = _run_all(a, names, train, stream, cut, out, fingerprint, model, extra)
        chosen = how["chosen"]
        summary = CR.summary(results, a.benchmark, stream, [f"{n} ({why[n]})" for n in skipped], chosen, how,
                             _agreement(out, chosen, names))
        write_text(out / "summary.md", CR.summary_markdown(results, summary))
        write_json(out / "summary.json", summary)
    if not getattr(a, "quiet", False):
        print(f"-> {out}/summary.json, summary.md" + (f" (not run: {', '.join(skipped)})" if skipped else ""))
        for line in CR.goal_lines(summary):
            print(line)
    return 0


def _agreement(out: Path, chosen: str | None, names: list[str]) -> dict:
    """Each reference rule's alarm agreement with the chosen monitor, from their ``steps.jsonl``."""
    from ego_adr.online_mistakes.goal import agreement
    from ego_adr.online_mistakes.registry import REFERENCE

    if chosen is None:
        return {}

    def rows(n: str) -> list[dict]:
        return [json.loads(x) for x in (out / n / "steps.jsonl").read_text().splitlines() if x.strip()]

    return {r: agreement(rows(chosen), rows(r)) for r in REFERENCE if r in names and r != chosen}


def chosen_without_test(train, results: list[dict], options: dict | None = None, seeds=None
                        ) -> tuple[str | None, dict]:
    """The monitor chosen without the test, by the cut benchmarks' own rule on the same training set: the nested
    cross-validation over the outer-fold seeds (``selection.record``, its folds kept under the cache root). Never a
    test number."""
    from ego_adr.online_mistakes import selection

    sel = selection.record(train, [m["monitor"] for m in results], options, seeds or selection.OUTER_SEEDS)
    return sel["chosen"], sel


def read_summary(folder: str | Path) -> dict:
    return json.loads((Path(folder) / "summary.json").read_text(encoding="utf-8"))
