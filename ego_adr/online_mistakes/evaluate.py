"""``python -m ego_adr.monitoring evaluate``: one monitor (or ``all``) over one stream of a step-stream benchmark.

Order of work, so that a bad input never leaves anything in ``--out``: the flags that need no data (output and
cache folders writable, device, model name, monitor), then the ``--stream`` file's syntax, then the data root
(training and test files, the stream's video keys and step ids), then the model (only when a monitor that needs
one will run), and only then the output folder is claimed (:class:`ego_adr.folders.OutputFolder`: the same
settings redo their results identically, other settings refuse in one line) and results are written.

``--monitor all`` runs every registered monitor into ``OUT/<monitor>/`` (each folder as a single run would write
it) and writes ``OUT/summary.json`` (one row per monitor: name, privileged, blind, every metric and its interval;
the monitor chosen without the test, :mod:`.selection`, and how; position's ceiling; the goal rows,
:mod:`.goal`) and ``OUT/summary.md``, which leads with the chosen monitor; a monitor that needs a model runs only
when ``--model`` is given and is listed as not run otherwise. Every report prints the blind baselines of its
stream (:func:`references`).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.folders import OutputFolder
from ego_adr.monitoring.step_metrics import COUNT_KEYS, METRIC_KEYS, RANK_KEYS
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes import data as D
from ego_adr.online_mistakes.harness import (
    HARNESS_VERSION,
    RESULT_FILES,
    result,
    run_monitor,
    write_folder,
    write_text,
)
from ego_adr.online_mistakes.registry import BLIND, REGISTRY
from ego_adr.online_mistakes.report import monitor_report, summary_markdown
from ego_adr.store import check_writable_dir, write_json

MODEL_KEYS = ("model", "backend", "base_url")
ORACLES = ("oracle", "oracle-merged")  # the ground-truth steps: no recogniser noise in validation
PREGO_FLAGS = ("decoding", "samples", "temperature", "max_new_tokens")  # prego's decoding (its DECODINGS)


def _check_flags(a) -> list[str]:
    """Every check that needs no data; the monitors to run."""
    check_writable_dir(a.out, "--out")
    if a.cache_dir:
        check_writable_dir(a.cache_dir, "--cache-dir")
    from ego_adr.models.loading import check_device, check_model_name

    if a.device:
        check_device(a.device, a.backend)
    if a.model:
        check_model_name(a.model, a.backend)
    from ego_adr.online_mistakes.monitors.prego import cli_settings

    a.prego_settings = cli_settings(a)
    D.spec(a.benchmark)
    if a.monitor == "all":
        return [s.name for s in REGISTRY]
    if a.monitor not in REGISTRY:
        raise UserError(f"--monitor {a.monitor!r} is not one of {', '.join(REGISTRY.names())}, all")
    if REGISTRY.get(a.monitor).needs_model and not a.model:
        raise UserError(f"--monitor {a.monitor} needs --model NAME (an alias, hub id or folder; --model tiny runs "
                        "offline)")
    return [a.monitor]


def _identity(a, stream: D.Stream, fingerprint: dict, monitor: str | list[str]) -> dict:
    """What a folder holds: one monitor's results (``monitor``: its name, the same whether run alone or by
    ``all``), or ``all``'s summary (``monitor``: the list)."""
    ident = {"command": "monitoring evaluate", "benchmark": a.benchmark, "stream": stream.name,
             "stream_sha256": stream.sha256, **{f"{k}_sha256": v for k, v in fingerprint.items()},
             "harness_version": HARNESS_VERSION,
             "validation_noise": {} if a.stream in ORACLES else dict(cv.NOISE)}
    names = [monitor] if isinstance(monitor, str) else monitor
    ident["monitor" if isinstance(monitor, str) else "monitors"] = monitor
    if any(REGISTRY.get(m).needs_model for m in names):
        ident.update({k: getattr(a, k) for k in MODEL_KEYS}, **a.prego_settings)
    return ident


def _model(a):
    from ego_adr.models.loading import ModelSettings, load_vlm

    return load_vlm(ModelSettings(model=a.model, backend=a.backend, device=a.device or "auto",
                                  base_url=a.base_url, cache_dir=a.cache_dir))


def references(train, stream) -> tuple[list[dict], dict]:
    """The blind baselines' results on ``stream`` (each table prints them) and position's ceiling: ``position``
    with k picked on this very stream, computed here for the tables and never used to choose anything."""
    from ego_adr.monitoring.step_metrics import intervals, scored
    from ego_adr.online_mistakes.monitors.baselines import position_ceiling

    blind = []
    for name in BLIND:
        rows, monitor = run_monitor(name, train, stream)
        blind.append(result(name, train, stream, rows, monitor))
    ks, rows = position_ceiling([r for rec in stream.recordings for r in
                                 ({"video": rec.video, "index": t, "label": y} for t, y in enumerate(rec.labels))])
    return blind, scored(rows) | {"intervals": intervals(rows), "k": ks, "stream": stream.name,
                                  "monitor": "position (k picked on the test)"}


def _one(a, name: str, train, stream, out: Path, ident: dict, model, refs) -> dict:
    kw = {"model": model, **{k: getattr(a, k) for k in PREGO_FLAGS}} if REGISTRY.get(name).needs_model else {}
    with OutputFolder(out, ident, "--out", RESULT_FILES):
        t0 = time.perf_counter()
        rows, monitor = run_monitor(name, train, stream, **kw)
        res = result(name, train, stream, rows, monitor)
        res["seconds"] = round(time.perf_counter() - t0, 3)
        blind, ceiling = refs
        res["blind_baselines"] = {b["monitor"]: {k: b[k] for k in ("macro_f1", "balanced_f1")} for b in blind}
        res["position_ceiling"] = {k: {"k": ceiling["k"][k], "value": ceiling[k]} for k in ceiling["k"]}
        write_folder(out, rows, res, monitor_report(res, blind, ceiling), getattr(monitor, "files", None))
    if not a.quiet:
        print(f"{name:<16} " + "  ".join(f"{k} {res[k]:.3f}" for k in METRIC_KEYS) + f"  -> {out}")
    return res


def _summary(a, out: Path, train, stream, results: list[dict], skipped: list[str], ceiling: dict) -> None:
    """``summary.json`` and ``summary.md`` of ``--monitor all``: the monitor chosen without the test
    (:mod:`.selection`, on the training recordings alone) leads; every row carries its intervals."""
    from ego_adr.online_mistakes import selection
    from ego_adr.online_mistakes.goal import goal

    sel = selection.record(train, [m["monitor"] for m in results])
    keys = (*METRIC_KEYS, *RANK_KEYS, *COUNT_KEYS)
    rows = [{"monitor": m["monitor"], "privileged": m["privileged"], "blind": m["monitor"] in BLIND,
             **{k: m[k] for k in keys}, "intervals": m["intervals"]} for m in results]
    goals = goal(results, a.benchmark, stream.name, sel["chosen"], ceiling)
    summary = {"benchmark": a.benchmark, "stream": stream.name, "stream_sha256": stream.sha256,
               "chosen_on_validation": sel["chosen"], "selection": sel, "rows": rows,
               "position_ceiling": {k: {"k": ceiling["k"][k], "value": ceiling[k],
                                        "interval": ceiling["intervals"].get(k)} for k in ceiling["k"]},
               "not_run": [f"{n} (needs --model)" for n in skipped], "goal": goals}
    write_text(out / "summary.md", summary_markdown(results, a.benchmark, stream.name, summary["not_run"], goals,
                                                    sel, ceiling))
    write_json(out / "summary.json", summary)


def evaluate(a) -> int:
    names = _check_flags(a)
    if a.stream not in D.STREAMS and not Path(a.stream).is_file():
        raise UserError(f"--stream {a.stream!r} is neither one of {', '.join(D.STREAMS)} nor a predictions file")
    parsed = None if a.stream in D.STREAMS else D.parse_predictions(a.stream)
    train = D.load_training(a.data_root, a.benchmark)
    stream = D.load_stream(a.data_root, a.benchmark, a.stream, parsed)
    if a.stream not in ORACLES:  # a recogniser's output: validation episodes pass through the noise channel
        train = dataclasses.replace(train, noise=cv.NOISE)
    fingerprint = D.data_fingerprint(a.data_root, a.benchmark)
    skipped = [n for n in names if REGISTRY.get(n).needs_model and not a.model]
    names = [n for n in names if n not in skipped]
    model = _model(a) if any(REGISTRY.get(n).needs_model for n in names) else None
    for note in stream.notes:
        print(f"note: {note}")
    out = Path(a.out)
    refs = references(train, stream)
    if a.monitor != "all":
        _one(a, names[0], train, stream, out, _identity(a, stream, fingerprint, names[0]), model, refs)
        return 0
    with OutputFolder(out, _identity(a, stream, fingerprint, names), "--out", ("summary.json",)):
        results = [_one(a, n, train, stream, out / n, _identity(a, stream, fingerprint, n), model, refs)
                   for n in names]
        _summary(a, out, train, stream, results, skipped, refs[1])
    if not a.quiet:
        print(f"-> {out}/summary.json, summary.md" + (f" (not run: {', '.join(skipped)})" if skipped else ""))
    return 0
