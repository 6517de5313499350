"""``python -m ego_adr.monitoring evaluate``: one monitor (or ``all``) over one stream of a step-stream benchmark.

Order of work, so that a bad input never leaves anything in ``--out``: the flags that need no data (output and
cache folders writable, device, model name, monitor), then the ``--stream`` file's syntax, then the data root
(training and test files, the stream's video keys and step ids), then the model (only when a monitor that needs
one will run), and only then the output folder is claimed (:class:`ego_adr.folders.OutputFolder`: the same
settings redo their results identically, other settings refuse in one line) and results are written.

``--monitor all`` runs every registered monitor into ``OUT/<monitor>/`` (each folder as a single run would write
it) and writes ``OUT/summary.json`` (one row per monitor: name, privileged, blind, reference, every metric and its
interval; the monitor chosen without the test, :mod:`.selection` over its outer-fold seeds (``--selection-seeds``,
default :data:`.selection.OUTER_SEEDS`), and how; position's ceiling; the goal rows, :mod:`.goal`; the reference
rules' alarm agreement with the chosen monitor) and ``OUT/summary.md``, which leads with the chosen monitor; a
monitor that needs a model runs only when ``--model`` is given and is listed as not run otherwise. Every report
prints the blind baselines and reference rules of its stream (:func:`references`), with each rule's agreement with
the report's monitor. The training set every fit of a run is given is the one
:func:`~ego_adr.online_mistakes.fitting.configured` makes for its stream (the run's own fits, the nested selection's
and the reference rows').
A monitor's options come as ``--monitor-option KEY=VALUE`` and are checked against what the monitor declares
(:meth:`ego_adr.monitoring.registry.Registry.options`); PREGO's older flags (``--decoding``, ``--samples``,
``--temperature``, ``--max-new-tokens``) are aliases of its options. With ``--monitor all`` an option goes to
every monitor that takes it, and one that no monitor takes is refused. The resolved options (defaults filled in)
are part of each folder's identity and of its ``metrics.json``.

``--partial`` scores a ``--stream FILE`` that covers only some test videos: the covered ones are scored, the
others listed (``unscored_videos``), nothing invented for them; ``coverage`` says how many of the benchmark's
test videos were scored, and no goal line compares such a run with a published row over the whole test set.
"""

from __future__ import annotations

import time
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.folders import OutputFolder
from ego_adr.monitoring.step_metrics import COUNT_KEYS, METRIC_KEYS, RANK_KEYS
from ego_adr.online_mistakes.data import cut as D
from ego_adr.online_mistakes.fitting import (
    HARNESS_VERSION,
    RESULT_FILES,
    configured,
    result,
    run_monitor,
    write_folder,
)
from ego_adr.online_mistakes.goal import agreement
from ego_adr.online_mistakes.registry import BLIND, REFERENCE, REGISTRY, not_runnable
from ego_adr.online_mistakes.report import monitor_report, summary_markdown
from ego_adr.store import check_writable_dir, write_json, write_text

MODEL_KEYS = ("model", "backend", "base_url")
ALIASES = ("decoding", "samples", "temperature", "max_new_tokens")  # prego's flags: aliases of its options


def _given_options(a) -> tuple[dict[str, str], list[str]]:
    """``--monitor-option KEY=VALUE`` and the alias flags as ``KEY -> text``, and how the user wrote each."""
    given: dict[str, str] = {}
    typed: list[str] = []
    pairs = [(*item.partition("=")[::2], f"--monitor-option {item}", "=" in item) for item in a.monitor_option or ()]
    pairs += [(k, str(getattr(a, k)), f"--{k.replace('_', '-')} {getattr(a, k)}", True) for k in ALIASES
              if getattr(a, k, None) is not None]
    for key, value, how, ok in pairs:
        key = key.strip().replace("-", "_")
        if not ok or not key:
            raise UserError(f"{how}: not KEY=VALUE (e.g. --monitor-option seed=1)")
        if key in given and given[key] != value:
            raise UserError(f"{how} contradicts {typed[list(given).index(key)]}: give the option once")
        if key not in given:
            given[key] = value
            typed.append(how)
    return given, typed


def _options(a, names: list[str]) -> dict[str, dict]:
    """The resolved options of each monitor to run; one line naming an option a monitor does not take or cannot
    use (with ``all``: that no monitor takes)."""
    given, typed = _given_options(a)
    out = {}
    for n in names:
        takes = REGISTRY.options(n)
        mine = {k: v for k, v in given.items() if k in takes} if a.monitor == "all" else given
        try:
            out[n] = REGISTRY.resolve_options(n, mine)
            check = getattr(REGISTRY.factory(n), "check_options", None)
            if check is not None:
                check(dict(out[n]))
        except ValueError as e:
            raise UserError(f"{', '.join(typed)}: {e}") from None
    unused = [h for k, h in zip(given, typed) if not any(k in REGISTRY.options(n) for n in names)]
    if unused:
        raise UserError(f"{unused[0]}: no monitor takes this option (`--help` lists each monitor's options)")
    return out


def _seeds(a) -> tuple[int, ...]:
    """``--selection-seeds`` (``--monitor all`` only), else the selection's seeds fixed in advance."""
    from ego_adr.online_mistakes.selection import OUTER_SEEDS, check_seeds

    text = getattr(a, "selection_seeds", None)
    if text is None:
        return OUTER_SEEDS
    if a.monitor != "all":
        raise UserError(f"--selection-seeds {text}: the nested selection runs with --monitor all only")
    try:
        return check_seeds([x.strip() for x in str(text).split(",") if x.strip()])
    except ValueError as e:
        raise UserError(f"--selection-seeds {text!r}: {e}; give distinct whole numbers, e.g. 1,2,3,4,5") from None


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
    D.spec(a.benchmark)
    if a.monitor == "all":
        names = [s.name for s in REGISTRY]
    elif a.monitor not in REGISTRY:
        raise UserError(f"--monitor {a.monitor!r} is not one of {', '.join(REGISTRY.names())}, all")
    else:
        a.monitor = REGISTRY.get(a.monitor).name  # an alias (one-step-memory) runs, and is named, as its rule
        names = [a.monitor]
    a.options = _options(a, names)
    a.seeds = _seeds(a)
    if a.monitor != "all" and REGISTRY.get(a.monitor).needs_model and not a.model:
        raise UserError(f"--monitor {a.monitor} needs --model NAME (an alias, hub id or folder; --model tiny runs "
                        "offline)")
    if a.partial and a.stream in D.STREAMS:
        raise UserError(f"--partial is for a --stream FILE that covers some test videos; {a.stream} covers all")
    from ego_adr.online_mistakes.workers import default_jobs

    if getattr(a, "jobs", None) is not None and a.jobs < 1:
        raise UserError(f"--jobs {a.jobs}: give 1 or more processes")
    try:
        a.jobs = getattr(a, "jobs", None) or default_jobs()
    except ValueError as e:
        raise UserError(f"{e}: unset it or give a whole number") from None
    return names


def check_inputs(a, names: list[str], train) -> None:
    """What each monitor reads beside the training set is there (e.g. PREGO's example file) and its options fit
    the run (e.g. a ``dtgl-do`` config the benchmark has), before anything is written; ``train`` as the run gives
    it (:func:`~ego_adr.online_mistakes.fitting.configured`)."""
    for n in names:
        check = getattr(REGISTRY.factory(n), "check_inputs", None)
        if check is not None:
            check(train, a.data_root, a.options[n])


def _identity(a, train, stream: D.Stream, fingerprint: dict, monitor: str | list[str]) -> dict:
    """What a folder holds: one monitor's results (``monitor``: its name, the same whether run alone or by
    ``all``), or ``all``'s summary (``monitor``: the list)."""
    ident = {"command": "monitoring evaluate", "benchmark": a.benchmark, "stream": stream.name,
             "stream_sha256": stream.sha256, **{f"{k}_sha256": v for k, v in fingerprint.items()},
             "harness_version": HARNESS_VERSION,
             "validation_noise": dict(train.noise)}
    names = [monitor] if isinstance(monitor, str) else monitor
    ident["monitor" if isinstance(monitor, str) else "monitors"] = monitor
    if isinstance(monitor, str):  # one key per option, so a refusal names the option that differs
        ident.update({f"option.{k}": v for k, v in a.options[monitor].items()})
    else:
        ident["options"] = {n: a.options[n] for n in names}
        ident["selection_seeds"] = list(a.seeds)
    if stream.coverage["scored"] < stream.coverage["benchmark"]:
        ident["coverage"] = stream.coverage
    if any(REGISTRY.get(m).needs_model for m in names):
        ident.update({k: getattr(a, k) for k in MODEL_KEYS})
    return ident


def _model(a):
    from ego_adr.models.loading import ModelSettings, load_vlm

    return load_vlm(ModelSettings(model=a.model, backend=a.backend, device=a.device or "auto",
                                  base_url=a.base_url, cache_dir=a.cache_dir))


def references(train, stream) -> tuple[list[dict], dict, dict[str, list[dict]]]:
    """The blind baselines' and reference rules' results on ``stream`` (each table prints them), position's
    ceiling -- ``position`` with k picked on this very stream, computed here for the tables and never used to choose
    anything -- and the reference rules' per-step rows (each monitor's agreement with them)."""
    from ego_adr.monitoring.step_metrics import intervals, scored
    from ego_adr.online_mistakes.monitors.baselines import position_ceiling

    rules, rule_rows = [], {}
    for name in (*BLIND, *REFERENCE):
        rows, monitor = run_monitor(name, train, stream)
        rules.append(result(name, train, stream, rows, monitor))
        if name in REFERENCE:
            rule_rows[name] = rows
    ks, rows = position_ceiling([r for rec in stream.recordings for r in
                                 ({"episode": rec.video, "index": t, "label": y} for t, y in enumerate(rec.labels))])
    return rules, scored(rows) | {"intervals": intervals(rows), "k": ks, "stream": stream.name,
                                  "monitor": "position (k picked on the test)"}, rule_rows


def _one(a, name: str, train, stream, out: Path, ident: dict, model, refs) -> dict:
    kw = {"data_root": a.data_root, **a.options[name], **({"model": model} if REGISTRY.get(name).needs_model
                                                              else {})}
    with OutputFolder(out, ident, "--out", RESULT_FILES):
        t0 = time.perf_counter()
        bar = REGISTRY.get(name).needs_model and not a.quiet  # a model's monitor takes minutes: show its steps
        rows, monitor = run_monitor(name, train, stream, progress=bar, **kw)
        res = result(name, train, stream, rows, monitor, a.options[name])
        res["seconds"] = round(time.perf_counter() - t0, 3)
        rules, ceiling, rule_rows = refs
        for key, names in (("blind_baselines", BLIND), ("reference_rules", REFERENCE)):
            res[key] = {b["monitor"]: {k: b[k] for k in ("macro_f1", "balanced_f1")} for b in rules
                        if b["monitor"] in names}
        res["position_ceiling"] = {k: {"k": ceiling["k"][k], "value": ceiling[k]} for k in ceiling["k"]}
        res["reference_agreement"] = {r: agreement(rows, rr) for r, rr in rule_rows.items() if r != name}
        write_folder(out, rows, res, monitor_report(res, rules, ceiling), getattr(monitor, "files", None))
    return res


def _said(a, res: dict, out: Path) -> dict:
    if not a.quiet:
        top1 = (res.get("next_step_top1") or {}).get("accuracy")
        extra = f"  auroc {res['auroc']:.3f}  next-step top-1 {top1:.3f}" if top1 is not None else ""
        cells = "  ".join(f"{k} {res[k]:.3f}" for k in METRIC_KEYS)
        print(f"{res['monitor']:<16} {cells}{extra}  -> {out}")
    return res


def _group(a, group: list[str], train, stream, out: Path, idents: dict, refs) -> list[dict]:
    """A :mod:`.workers` task: the monitors of one group (they share fits in this process), each into its folder."""
    return [_one(a, n, train, stream, out / n, idents[n], None, refs) for n in group]


def _run_all(a, names: list[str], train, stream, out: Path, fingerprint: dict, model, refs):
    """Every monitor of ``names`` into ``out/<monitor>/`` and the nested selection: the monitors that need no model
    and the selection's fits (unless cached) as :mod:`.workers` tasks on ``--jobs`` processes, the others here.
    (results in ``names``' order, the selection)."""
    from ego_adr.online_mistakes import selection, workers

    idents = {n: _identity(a, train, stream, fingerprint, n) for n in names}
    by, sel = selection.run_beside(
        train, names, a.options, a.jobs,
        lambda n: _one(a, n, train, stream, out / n, idents[n], model, refs),
        lambda g: (_group, (workers.plain(a), g, train, stream, out, idents, refs)), a.seeds)
    return [_said(a, by[n], out / n) for n in names], sel


def _summary(a, out: Path, stream, results: list[dict], skipped: list[str], ceiling: dict, sel: dict) -> None:
    """``summary.json`` and ``summary.md`` of ``--monitor all``: the monitor chosen without the test (``sel``,
    :mod:`.selection`, on the training recordings alone) leads; every row carries its intervals."""
    from ego_adr.online_mistakes.goal import goal

    keys = (*METRIC_KEYS, *RANK_KEYS, *COUNT_KEYS)
    rows = [{"monitor": m["monitor"], "privileged": m["privileged"], "blind": m["monitor"] in BLIND,
             "reference": m["monitor"] in REFERENCE,
             **{k: m[k] for k in keys}, "intervals": m["intervals"]} for m in results]
    goals = goal(results, a.benchmark, stream.name, sel["chosen"], ceiling, sel["seeds"])
    agree = next((m.get("reference_agreement") for m in results if m["monitor"] == sel["chosen"]), None)
    summary = {"benchmark": a.benchmark, "stream": stream.name, "stream_sha256": stream.sha256,
               "coverage": stream.coverage, "unscored_videos": list(stream.unscored),
               "chosen_on_validation": sel["chosen"], "selection": sel, "rows": rows,
               "position_ceiling": {k: {"k": ceiling["k"][k], "value": ceiling[k],
                                        "interval": ceiling["intervals"].get(k)} for k in ceiling["k"]},
               "not_run": list(skipped), "goal": goals, "reference_agreement": agree}
    write_text(out / "summary.md", summary_markdown(results, a.benchmark, stream.name, summary["not_run"], goals,
                                                    sel, ceiling, agree))
    write_json(out / "summary.json", summary)


def evaluate(a) -> int:
    names = _check_flags(a)
    if a.stream not in D.STREAMS and not Path(a.stream).is_file():
        raise UserError(f"--stream {a.stream!r} is neither one of {', '.join(D.STREAMS)} nor a predictions file")
    parsed = None if a.stream in D.STREAMS else D.parse_predictions(a.stream)
    train = D.load_training(a.data_root, a.benchmark)
    if not train.sequences and any(REGISTRY.get(n).trains for n in names):
        raise UserError(f"--data-root {a.data_root}: {D.spec(a.benchmark).files()['train']} holds no training "
                        f"sequence, and --monitor {a.monitor} trains on them; {D.DOWNLOAD_HINT}")
    stream = D.load_stream(a.data_root, a.benchmark, a.stream, parsed, partial=a.partial)
    train = configured(train, stream.name)  # every fit of this run, the nested selection's too, gets the stream's
    fingerprint = D.data_fingerprint(a.data_root, a.benchmark)
    why = not_runnable(a.monitor, names, bool(a.model))
    skipped = list(why)
    names = [n for n in names if n not in why]
    check_inputs(a, names, train)
    model = _model(a) if any(REGISTRY.get(n).needs_model for n in names) else None
    for n in list(names) if model is not None else ():  # the model can do what the monitor asks (prego-lm)
        try:
            getattr(REGISTRY.factory(n), "check_model", lambda m: None)(model)
        except UserError as e:  # named alone: stop; within all: listed as not run, with why
            if a.monitor != "all":
                raise
            why[n] = str(e).removeprefix(f"--monitor {n}: ")
            skipped.append(n)
            names.remove(n)
    for note in stream.notes:
        print(f"note: {note}")
    out = Path(a.out)
    refs = references(train, stream)
    if a.monitor != "all":
        ident = _identity(a, train, stream, fingerprint, names[0])
        _said(a, _one(a, names[0], train, stream, out, ident, model, refs), out)
        return 0
    with OutputFolder(out, _identity(a, train, stream, fingerprint, names), "--out", ("summary.json",)):
        results, sel = _run_all(a, names, train, stream, out, fingerprint, model, refs)
        _summary(a, out, stream, results, [f"{n} ({why[n]})" for n in skipped], refs[1], sel)
    if not a.quiet:
        print(f"-> {out}/summary.json, summary.md" + (f" (not run: {', '.join(skipped)})" if skipped else ""))
    return 0
