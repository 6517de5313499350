"""``python -m ego_adr.monitoring evaluate --benchmark assembly101-complete|epic-tent-complete``: one monitor (or
``all``) over every step of every test recording (:mod:`.data.complete`).

Each monitor is built from the step-stream registry and fitted once on the cut benchmark's training set, exactly as
for Assembly101-O / EPIC-Tent-O, then fed every complete test recording one step at a time through
:func:`ego_adr.monitoring.monitor.run_episode`; it keeps going after an alarm (the person goes on), so every
step gets its own verdict. The same fitted monitor is also fed the cut benchmark's ``oracle`` stream, and its cut
row (the per-step metrics and AUROC there) is kept beside the complete one: how much of a cut-protocol score its
position explained shows in one table.

It runs on the one harness (:mod:`ego_adr.monitoring.harness`; :class:`CompleteStreams` is its driver). Order of
work, so that bad input never leaves anything in ``--out``: the flags (as the cut benchmark checks them), the
stream file's syntax, the data root and its source files (labels, intervals, the stream's lengths); only then the
output folder is claimed (a finished monitor folder is read back, not redone), the model loaded when one is needed,
and results written.

Every monitor is built and fitted by :func:`ego_adr.online_mistakes.fitting.fitted` on the training set
:func:`~ego_adr.online_mistakes.fitting.configured` for the complete stream (``oracle``: the annotated steps, as the
cut benchmark's ``oracle``; a file: a recogniser's steps, with the recogniser-noise channel in validation), so
``dtgl-do`` trains DTGL's DO* config on the oracle steps here as on the cut benchmark.

The monitor chosen without the test (:func:`chosen_without_test`) is the cut benchmark's choice on the same training
set: the nested selection over the outer-fold seeds (:mod:`.selection`), whose folds are kept under the cache root
(``online_mistakes/selection-folds/<key>.json``, the key covering the fold's recordings and validation episodes,
the monitor and its options, this code and the library versions), so they are paid once per training set, not once
per run; ``summary.json``'s ``selection.fold_cache`` says how many were read. With ``--monitor all`` the fits (each
monitor's and the selection's) run on ``--jobs`` processes (the harness's, grouped by :mod:`.workers`).

A monitor folder holds ``steps.jsonl`` (per step: the monitoring layer's fields, ``episode`` the video and the
recording's truth included, then ``video``, ``step_id``, ``step_name``, ``source_label`` (correct, mistake,
correction), ``kinds``, ``scored`` and, where a monitor has one per metric, ``flagged_for``), ``metrics.json`` (:func:`.complete_metrics.complete_metrics`, the ``cut`` row, the
monitor's selection, the benchmark's rules and options) and ``report.md``; ``--monitor all`` adds
``summary.json`` (a row per monitor, each with its ``cut`` row; ``goal``) and ``summary.md``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.models.compat import runtime_versions
from ego_adr.monitoring.driver import MonitorResult
from ego_adr.monitoring.monitor import stepped
from ego_adr.monitoring.numerics import stable
from ego_adr.monitoring.per_step import step_row
from ego_adr.online_mistakes import complete_metrics as CM
from ego_adr.online_mistakes import complete_report as CR
from ego_adr.online_mistakes.data import complete as C
from ego_adr.online_mistakes.data import cut as D
from ego_adr.online_mistakes.driver import TIMING, Settings, StepStreams, timing_apart
from ego_adr.online_mistakes.fitting import THRESHOLD, configured, feed, fitted
from ego_adr.online_mistakes.registry import REGISTRY
from ego_adr.online_mistakes.types import StepContext, TrainingSet
from ego_adr.store import write_json, write_text

COMPLETE_VERSION = "3"  # bump when what a complete-trial folder holds changes


@dataclass(frozen=True)
class CompleteData:
    """A complete-trial benchmark's splits as a run reads them: the training set (:func:`configured` for the
    stream), the complete stream to score, the cut benchmark's ``oracle`` stream (each monitor's cut row), the data's
    fingerprint and what every ``metrics.json`` adds (the training steps by source label)."""

    train: TrainingSet
    stream: C.CompleteStream
    cut: D.Stream
    fingerprint: dict
    extra: dict


def _truth(rec: C.CompleteRecording) -> dict:
    """What is true of a recording, in the layer's per-step fields: errorful, its first (scored) mistake, the kinds
    of its mistakes, the first one's kind."""
    first = next((i for i, (y, sc) in enumerate(zip(rec.labels, rec.scored)) if y and sc), None)
    kinds = sorted({k for ks, y, sc in zip(rec.kinds, rec.labels, rec.scored) if y and sc for k in ks})
    return {"errorful": first is not None, "error_onset": first, "error_types": kinds,
            "primary_type": rec.kinds[first][0] if first is not None and rec.kinds[first] else None}


def rows_of(monitor, stream: C.CompleteStream, progress: bool = False, label: str = "") -> list[dict]:
    """Every complete recording through the fitted ``monitor``, one step at a time; the per-step rows: the
    monitoring layer's (:func:`ego_adr.monitoring.per_step.step_row`, ``episode`` the video) plus the fields of
    this benchmark. ``progress``: a bar over the steps on stderr (a monitor that asks a model takes minutes)."""
    rows = []
    for rec, outs in stepped(monitor, stream.recordings, lambda r: StepContext(stream.benchmark, r.video,
                                                                               stream.taxonomy),
                             progress=progress, desc=f"{label or 'monitor'} complete trials"):
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


def result(name: str, train, stream: C.CompleteStream, rows: list[dict], cut_rows: list[dict], monitor,
           extra: dict) -> dict:
    """``metrics.json`` of one monitor on a complete-trial benchmark; as on the cut benchmarks, a monitor's own
    ``stats`` (a model's calls and cache hits, a graph's training) and what it reads off its rows (``summarise``:
    prego-lm's top-1 next step) are part of it."""
    spec = REGISTRY.get(name)
    cut = CM.step_block(cut_rows) | {"benchmark": C.spec(stream.benchmark).cut, "stream": "oracle",
                                     "steps": len(cut_rows), "mistakes": sum(r["label"] for r in cut_rows)}
    out = {
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
    if hasattr(monitor, "stats"):
        out["stats"] = monitor.stats()
    if hasattr(monitor, "summarise"):
        out.update(monitor.summarise(rows))
    return out


class CompleteStreams(StepStreams):
    """The complete-trial benchmarks on the harness (module docstring)."""

    def cut_of(self, s) -> str:
        return C.spec(s.benchmark).cut

    def check(self, s, names: list[str], options: dict[str, dict]) -> None:
        super().check(s, names, options)
        stream = s.own.stream
        if stream != "oracle" and (stream in D.STREAMS or not Path(stream).is_file()):
            raise UserError(f"--stream {stream!r}: {s.benchmark} takes oracle or a predictions file covering whole "
                            f"recordings ({', '.join(x for x in D.STREAMS.names() if x != 'oracle')} hold only the cut "
                            "sequences)")

    def load(self, s) -> CompleteData:
        own: Settings = s.own
        parsed = None if own.stream == "oracle" else D.parse_predictions(own.stream)
        stream = C.load_stream(own.data_root, s.benchmark, own.stream, own.corrections or "correct", parsed)
        train = configured(C.training(own.data_root, s.benchmark), stream.name)  # every fit of the run: the stream's
        return CompleteData(train, stream, D.load_stream(own.data_root, self.cut_of(s), "oracle"),
                            C.fingerprint(own.data_root, s.benchmark),
                            {"training_steps_by_source_label": C.training_errors(own.data_root, s.benchmark)})

    def check_data(self, s, data: CompleteData, names: list[str], options: dict[str, dict]) -> None:
        self.check_inputs(s, data.train, names, options)
        for note in data.stream.notes:
            print(f"note: {note}")

    def identity(self, s, data: CompleteData, monitor, options: dict[str, dict], former: bool = False) -> dict:
        """As the cut benchmarks' (:meth:`~ego_adr.online_mistakes.evaluate.CutStreams.identity`); ``former``: as
        main spelled a summary's before issue 46 (the resolved list, no options)."""
        stream = data.stream
        ident = {"command": "monitoring evaluate", "benchmark": s.benchmark, "stream": stream.name,
                 "stream_sha256": stream.sha256, "corrections": stream.corrections,
                 **{f"{k}_sha256": v for k, v in data.fingerprint.items()}, "harness_version": COMPLETE_VERSION,
                 "validation_noise": dict(data.train.noise)}
        if isinstance(monitor, str):
            ident["monitor"] = monitor
            ident.update({f"option.{k}": v for k, v in options.get(monitor, {}).items()})
        else:
            asked, given = self.asked(s, list(monitor))
            ident["monitors"] = list(monitor) if former else asked
            if not former:
                ident["options"] = given
            ident["selection_seeds"] = list(self.seeds(s))
        return ident | self.model_keys(s, [monitor] if isinstance(monitor, str) else list(monitor))

    def run_monitor(self, s, data: CompleteData, name: str, options: dict, prepared, out: Path) -> MonitorResult:
        needs = REGISTRY.get(name).needs_model
        bars = needs and not s.quiet  # a monitor that asks a model: a bar over its fit's and its steps' requests
        kw = {"data_root": s.own.data_root, **options, **({"model": prepared, "progress": bars} if needs else {})}
        t0 = time.perf_counter()
        monitor = fitted(name, data.train, **kw)
        rows = rows_of(monitor, data.stream, progress=bars, label=name)
        cut_rows = feed(monitor, data.train, data.cut, progress=bars, label=name)
        res, timing = timing_apart(result(name, data.train, data.stream, rows, cut_rows, monitor, data.extra),
                                   round(time.perf_counter() - t0, 3))
        files = {f: json.dumps(d, indent=1, ensure_ascii=False, default=str)
                 for f, d in (getattr(monitor, "files", None) or {}).items()}
        return MonitorResult(name, res, rows, CR.monitor_report(res), files | {TIMING: timing})

    def said(self, s, result: MonitorResult, out: Path) -> None:
        if not s.quiet:
            res = result.metrics
            print(f"{res['monitor']:<18} macro F1 {res['macro_f1']:.3f} (cut {res['cut']['macro_f1']:.3f})  AUROC "
                  f"{res['auroc']:.3f} (cut {res['cut']['auroc']:.3f})  -> {out}")

    def finish(self, s, data: CompleteData, results: list[MonitorResult], out: Path, not_run: list[str], prepared,
               beside=None) -> None:
        """``summary.json``/``summary.md``: a row per monitor with its cut row, led by the cut benchmarks' choice
        on the same training set (the nested selection); the goal lines."""
        how, timing = self.selection(s, data, beside or [])
        chosen, names = how["chosen"], [r.name for r in results]
        summary = CR.summary([r.metrics for r in results], s.benchmark, data.stream, list(not_run), chosen, how,
                             _agreement(out, chosen, names))
        write_text(out / "summary.md", CR.summary_markdown([r.metrics for r in results], summary))
        write_json(out / "summary.json", summary)
        write_json(out / TIMING, timing)
        if not s.quiet:
            print(f"-> {out}/summary.json, summary.md" + (f" (not run: {', '.join(not_run)})" if not_run else ""))
            for line in CR.goal_lines(summary):
                print(line)


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
