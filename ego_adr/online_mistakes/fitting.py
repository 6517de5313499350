"""Running one monitor over one stream of a step-stream benchmark, and what its output folder holds.

A monitor is built from the registry, fitted once on the benchmark's correct training sequences (never on a test
file), then fed every test recording through :func:`ego_adr.monitoring.monitor.run_episode`: reset with the
recording's :class:`~ego_adr.online_mistakes.types.StepContext`, then one step id at a time from a generator, so
it never sees a later step. Where a monitor leaves ``flagged`` unset, it alarms when ``p_error >= 0.5``.

A monitor folder holds ``steps.jsonl`` (the monitoring layer's per-step rows, :mod:`ego_adr.monitoring.per_step`:
``episode`` the video, ``index``, ``label`` 1 for the mistake, ``p_error`` rounded to 6 decimals, ``flagged``,
``category``, ``onset``, ``evidence``, the episode's truth; plus ``step_id`` and ``flagged_for``, the alarm at the
operating point chosen for macro F1 and for F1b, both ``flagged`` for a monitor without a threshold),
``metrics.json`` (every metric of :mod:`ego_adr.monitoring.step_metrics` computed from those rows, each at its
operating point, AUROC and AUPRC of ``p_error``, the bootstrap ``intervals``, the counts, the monitor's
``selection`` and ``options``, the stream, its ``coverage``, notes and deviations, the library versions and the
CPU) and ``report.md`` (ours beside the published rows and the blind baselines). Each file is written atomically,
``metrics.json`` last: a folder with a ``metrics.json`` is complete.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ego_adr.models.compat import runtime_versions
from ego_adr.monitoring.monitor import stepped
from ego_adr.monitoring.numerics import cpu_model, stable
from ego_adr.monitoring.per_step import step_row
from ego_adr.monitoring.step_metrics import COLUMN_POINT, OPERATING_POINTS, RESAMPLES, SEED, intervals, scored
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.data.cut import Stream
from ego_adr.online_mistakes.registry import REGISTRY
from ego_adr.online_mistakes.types import ORACLE_STEPS, RECOGNISED_STEPS, StepContext, TrainingSet
from ego_adr.store import write_json, write_text

THRESHOLD = 0.5
ORACLE_STREAMS = ("oracle", "oracle-merged")  # the ground-truth steps of the cut benchmarks
HARNESS_VERSION = "3"  # bump when what a folder holds changes: an old folder is then not resumed as current
RESULT_FILES = ("steps.jsonl", "metrics.json", "report.md")


def configured(train: TrainingSet, stream: str) -> TrainingSet:
    """``train`` as every monitor of a run on ``stream`` is given it, the one place a stream configures the monitors
    (issue 42): the ground-truth segments (``oracle``, ``oracle-merged``, a complete benchmark's ``oracle``) are
    :data:`ORACLE_STEPS` with clean validation episodes; a recogniser's output (``miniroad``, a file) is
    :data:`RECOGNISED_STEPS` with validation through the recogniser-noise channel (:data:`cv.NOISE`). Every fit of
    the run -- its own, the nested selection's outer folds, the complete trials' -- receives this training set (or a
    ``dataclasses.replace`` of it), so ``dtgl-do``'s ``config=auto`` picks DTGL's config of that kind of steps."""
    if stream in ORACLE_STREAMS:
        return dataclasses.replace(train, steps=ORACLE_STEPS, noise=())
    return dataclasses.replace(train, steps=RECOGNISED_STEPS, noise=tuple(cv.NOISE))


def fitted(name: str, train: TrainingSet, **build_kw):
    """Monitor ``name`` (or an alias of it) built from the registry and fitted on ``train``: the one builder of the
    step-stream benchmarks (the harness, the nested selection and the complete trials all call it), so what a
    monitor is given cannot differ between them."""
    monitor = REGISTRY.build(REGISTRY.get(name).name, **build_kw)
    monitor.fit(train)  # a monitor without training keeps the layer Monitor's no-op fit
    return monitor


def run_monitor(name: str, train: TrainingSet, stream: Stream, *, progress: bool = False,
                **build_kw) -> tuple[list[dict], object]:
    """The per-step rows of monitor ``name`` on ``stream``, and the fitted monitor (for its selection, stats);
    fitted on ``train`` :func:`configured` for ``stream``. ``progress``: a bar over the test steps on stderr (a
    monitor that asks a model takes minutes)."""
    monitor = fitted(name, configured(train, stream.name), progress=progress, **build_kw)  # for one that takes it
    return feed(monitor, train, stream, progress=progress, label=name), monitor


def feed(monitor, train: TrainingSet, stream: Stream, progress: bool = False, label: str = "") -> list[dict]:
    """Every recording of ``stream`` through the (fitted) ``monitor``, one step at a time; the per-step rows."""
    rows = []
    for rec, outs in stepped(monitor, stream.recordings, lambda r: StepContext(stream.benchmark, r.video,
                                                                               train.taxonomy),
                             progress=progress, desc=f"{label or 'monitor'} {stream.name}"):
        # every test recording is cut at its first mistake (data.py): errorful, its mistake the last step
        truth = {"errorful": True, "error_onset": len(rec.steps) - 1}
        for t, out in enumerate(outs):
            flagged = bool(out.prob >= THRESHOLD) if out.flagged is None else bool(out.flagged)
            per = {k: bool(v) for k, v in (out.flagged_for or {}).items()}
            row = step_row(rec.video, t, rec.labels[t], stable(out.prob), truth, flagged=flagged,
                           category=out.category, onset=out.onset, evidence=out.evidence)
            rows.append(row | {"step_id": rec.steps[t],
                               "flagged_for": {k: per.get(k, flagged) for k in OPERATING_POINTS}})
    return rows


def result(name: str, train: TrainingSet, stream: Stream, rows: list[dict], monitor, options: dict | None = None
           ) -> dict:
    """``metrics.json`` of one monitor: the metrics from ``rows`` and everything a reader needs to trust them."""
    spec = REGISTRY.get(name)
    out = {
        "benchmark": stream.benchmark, "stream": stream.name, "stream_source": stream.source,
        "stream_sha256": stream.sha256, "coverage": stream.coverage, "unscored_videos": list(stream.unscored),
        "monitor": name, "options": dict(options or {}), "privileged": REGISTRY.privileged(spec),
        "reads": list(spec.reads), "extra_reads": list(REGISTRY.extra_reads(spec)),
        **scored(rows),
        "intervals": intervals(rows), "bootstrap": {"resamples": RESAMPLES, "seed": SEED, "unit": "recording",
                                                    "level": 0.95, "method": "percentile"},
        "column_points": dict(COLUMN_POINT),
        "videos": len(stream.recordings), "steps": len(rows), "mistakes": sum(r["label"] for r in rows),
        "training_sequences": len(train.sequences),
        # what the run's stream configured (configured): the kind of steps and the recogniser-noise channel of the
        # validation episodes (cv.NOISE; empty on the oracle steps)
        "steps_kind": train.steps, "validation_noise": dict(train.noise),
        "threshold_rule": f"the monitor's own flag; where it sets none, p_error >= {THRESHOLD}; a thresholded "
                          "monitor flags each column at the operating point chosen by cross-validation for its "
                          "metric (column_points; operating_points holds every metric at each)",
        "selection": getattr(monitor, "selection", None) or {"hyper_parameters": {}, "chosen_by": "not stated"},
        "deviations": list(getattr(monitor, "deviations", [])), "note": getattr(monitor, "note", None),
        "notes": list(stream.notes), "extra_videos": list(stream.extra_videos),
        "harness_version": HARNESS_VERSION,
        # a learned monitor trains from its seed, and the same code on another torch gives other weights
        # (sgt-oneclass moved up to 4.2 points from torch 2.14.1 to 2.15.0): the libraries are part of the result
        "versions": runtime_versions(), "cpu": cpu_model(),
    }
    if hasattr(monitor, "stats"):
        out["stats"] = monitor.stats()
    if hasattr(monitor, "summarise"):  # what a monitor reads off its own rows (prego-lm: top-1 next step)
        out.update(monitor.summarise(rows))
    return out


def write_folder(out: Path, rows: list[dict], result_: dict, report: str, files: dict | None = None) -> None:
    """The monitor folder's files, each atomically, ``metrics.json`` last (it marks the folder complete)."""
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "steps.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    for fname, data in (files or {}).items():
        write_json(out / fname, data)
    write_text(out / "report.md", report)
    write_json(out / "metrics.json", result_)
