"""The one harness every online benchmark runs on: ``python -m ego_adr.monitoring evaluate --benchmark B``.

The order of work is the same for every benchmark, so that a bad input never leaves anything behind and a folder
says what it holds before any costly step:

1. the monitors asked for (:func:`monitors_to_run`: a name, several ``a,b``, or ``all``) and their
   ``--monitor-option``s (:func:`monitor_options`, checked against what each monitor declares);
2. the benchmark's checks of its flags (no data read yet), then its data (``load``: every split it needs);
3. the output folder claimed with the run's identity (:mod:`ego_adr.folders`: the same settings resume, others
   refuse in one line) -- before any model is loaded; what is known only once the model is loaded (its
   fingerprint, the probe's route) is confirmed right after the load;
4. each monitor built from the benchmark's registry, fitted on the training split (:func:`fit_monitor`), fed every
   episode one observation at a time (:func:`episode_outputs`, the layer's
   :func:`~ego_adr.monitoring.monitor.run_episode`), its per-step rows written as ``steps.jsonl``, its metrics
   (pure functions of those rows) as ``metrics.json``, written last: a folder with a ``metrics.json`` is complete
   and a rerun reads it back instead of redoing it;
5. with several monitors, the benchmark's summary.

A benchmark gives the harness a :class:`~ego_adr.monitoring.driver.Benchmark` (its spec's ``driver``): its flags
and their typed settings, its checks, its splits, its identity, how one monitor runs on it and its summary. Two
folder layouts exist: ``folder_per_monitor`` (``OUT/`` for one monitor, ``OUT/<monitor>/`` each for ``all``: what
HelpMeOut and the step streams write) and one folder for all the monitors of a run (the video stream: one model,
one identity). ``--jobs`` spreads the monitors that need no model over processes (:mod:`.workers`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ego_adr.errors import UserError
from ego_adr.folders import IDENTITY_FILE, FolderLock, IdentityMismatch, claim, confirm, read_identity
from ego_adr.monitoring.driver import METRICS, Benchmark, MonitorResult
from ego_adr.monitoring.monitor import StepOutput, run_episode
from ego_adr.monitoring.settings import EvalSettings
from ego_adr.store import check_writable_dir, write_json, write_text


# -- the pieces every benchmark shares ---------------------------------------------------------------------------
def monitors_to_run(registry, asked: str) -> list[str]:
    """``all`` (every registered monitor, in registry order), one name or several (``a,b``), checked."""
    if asked == "all":
        return registry.names()
    names = [n.strip() for n in asked.split(",") if n.strip()]
    bad = [n for n in names if n not in registry]
    if bad or not names:
        raise UserError(f"--monitor {asked!r}: {registry.unknown(bad[0] if bad else asked)}, or all")
    return [registry.get(n).name for n in dict.fromkeys(names)]


def monitor_options(registry, names: Sequence[str], given: Sequence[str], every: bool,
                    aliases: Sequence[tuple[str, str, str]] = ()) -> dict[str, dict]:
    """Each monitor's options resolved (defaults filled in) from ``--monitor-option KEY=VALUE`` and a benchmark's
    alias flags (``aliases``: (option, value, how the user wrote it), :meth:`Benchmark.option_aliases`), then
    checked by the monitor's own ``check_options`` where it has one; with ``every`` (``all``) an option goes to the
    monitors that take it and one that none takes is refused. A refusal names the option as the user wrote it."""
    pairs: dict[str, str] = {}
    typed: dict[str, str] = {}
    for key, value, how, ok in [(*item.partition("=")[::2], f"--monitor-option {item}", "=" in item)
                                for item in given] + [(*a, True) for a in aliases]:
        key = key.strip().replace("-", "_")
        if not ok or not key:
            raise UserError(f"{how}: not KEY=VALUE (e.g. --monitor-option seed=1)")
        if pairs.get(key, value) != value:
            raise UserError(f"{how} contradicts {typed[key]}: give the option once")
        pairs.setdefault(key, value)
        typed.setdefault(key, how)
    out = {}
    for n in names:
        takes = registry.options(n)
        mine = {k: v for k, v in pairs.items() if k in takes} if every else pairs
        try:
            out[n] = registry.resolve_options(n, mine)
            getattr(registry.factory(n), "check_options", lambda o: None)(dict(out[n]))
        except ValueError as e:
            raise UserError(f"{', '.join(typed.values()) or '--monitor-option'}: {e}") from None
    unused = [typed[k] for k in pairs if not any(k in registry.options(n) for n in names)]
    if unused:
        raise UserError(f"{unused[0]}: no monitor takes this option (`--help` lists each monitor's options)")
    return out


def fit_monitor(monitor, spec, train: list | None, val: list | None = None) -> None:
    """Train a monitor whose spec says it trains, on the training split only; one whose ``fit`` takes ``val``
    chooses its checkpoint there (HelpMeOut's Table 10)."""
    import inspect

    if spec.trains:
        if val and "val" in inspect.signature(monitor.fit).parameters:
            monitor.fit(train or [], val=val)
        else:
            monitor.fit(train or [])


def episode_outputs(monitor, episodes: Iterable, *, id_of: Callable, context_of: Callable,
                    observations_of: Callable, progress: bool = False,
                    desc: str = "") -> Iterable[tuple[Any, list[StepOutput]]]:
    """(episode, the monitor's checked outputs) for every episode, one observation at a time
    (:func:`~ego_adr.monitoring.monitor.run_episode`); a progress bar when ``progress``."""
    from tqdm import tqdm

    for ep in tqdm(episodes, disable=not progress, desc=desc or f"monitor {monitor.name}"):
        yield ep, run_episode(monitor, id_of(ep), context_of(ep), observations_of(ep))


@contextlib.contextmanager
def open_folder(out: Path, identity: dict, result_files: tuple[str, ...], *, ways: str | None = None,
                fresh: bool = False, written: tuple[str, ...] = (), former: Sequence[dict] = (),
                outdated: Sequence[dict] = ()):
    """``out`` checked writable, locked and claimed for ``identity``; yields ``"new"`` or ``"resume"``. A folder
    whose identity is one of ``former`` (the same run as an older version spelled it) is re-labelled and resumed;
    one of ``outdated`` (the same settings, results of an older harness) is re-labelled and redone (``"new"``)."""
    check_writable_dir(out, "--out")
    with FolderLock(out):
        kw = {"result_files": result_files, **({"ways": ways} if ways else {})}
        try:
            state = claim(out, identity, fresh=fresh, **({"written": written} if fresh else {}), **kw)
        except IdentityMismatch:
            stored = read_identity(out)
            spelled = [json.loads(json.dumps(f, default=str)) for f in (*former, *outdated)]
            if stored not in spelled:
                raise
            write_json(out / IDENTITY_FILE, identity)
            state = "resume" if spelled.index(stored) < len(former) else "new"
        yield state


def confirm_late(out: Path, early: dict, late: dict, full: dict | None = None) -> None:
    """After the model is loaded: the folder's identity checked (or completed) with ``late`` (the model's
    fingerprint, the probe's route: :func:`ego_adr.folders.confirm`), then written in ``full``'s key order, so a
    folder claimed before the load holds what one claimed after it would."""
    if late:
        confirm(out, late)
    whole = early | late
    if full is not None and read_identity(out) == json.loads(json.dumps(whole, default=str)):
        write_json(out / IDENTITY_FILE, full)


def beside_identity(out: Path, keys: dict) -> None:
    """``keys`` written into ``out``'s ``identity.json`` beside the compared identity (:meth:`Benchmark.resolved`):
    a claim compares only the keys of the current identity, so these never refuse a rerun."""
    stored = read_identity(out) or {}
    keys = json.loads(json.dumps(keys, default=str))
    if keys and any(stored.get(k) != v for k, v in keys.items()):
        write_json(out / IDENTITY_FILE, stored | keys)


def write_monitor_files(out: Path, result: MonitorResult, bench: Benchmark, steps_name: str = "steps.jsonl",
                        metrics_name: str | None = METRICS) -> None:
    """A monitor's files, each atomically: the per-step rows, the other files, the report, ``metrics.json`` last."""
    out.mkdir(parents=True, exist_ok=True)
    if result.steps is not None:
        (out / steps_name).parent.mkdir(parents=True, exist_ok=True)
        write_text(out / steps_name, bench.steps_text(result.steps))
    for name, text in result.files.items():
        write_text(out / name, text)
    if result.report is not None:
        write_text(out / "report.md", result.report)
    if metrics_name:
        write_text(out / metrics_name, bench.metrics_text(result.metrics))


def read_back(out: Path, name: str) -> MonitorResult | None:
    """The result of a finished monitor folder (its ``metrics.json``), or None."""
    p = out / METRICS
    if not p.is_file():
        return None
    try:
        return MonitorResult(name, json.loads(p.read_text()), done_before=True)
    except json.JSONDecodeError:
        return None


# -- the run -----------------------------------------------------------------------------------------------------
def evaluate(spec, s: EvalSettings) -> int:
    """Run benchmark ``spec`` with settings ``s`` (the command's entry)."""
    bench = spec.make_driver()
    rc = bench.evaluate(s)  # a benchmark that runs itself (none of the house's since stage 2): its exit code
    return run(bench, s) if rc is None else rc


def run(bench: Benchmark, s: EvalSettings) -> int:
    names = monitors_to_run(bench.registry, s.monitor)
    several = s.every or len(names) > 1
    options = monitor_options(bench.registry, names, s.monitor_options, several, bench.option_aliases(s))
    if s.out is None and bench.out_required():
        raise UserError(f"--benchmark {bench.spec.name} needs --out DIR (its output folder)")
    why = bench.not_run(s, names)
    if why and not s.every:
        n, w = next(iter(why.items()))
        raise UserError(f"--monitor {n} {w}")
    if s.out is not None:
        check_writable_dir(s.out, "--out")
    _jobs(s)
    bench.check(s, names, options)
    data = bench.load(s)
    runnable = [n for n in names if n not in why]
    bench.check_data(s, data, runnable, options)
    skipped = [f"{n} ({w})" for n, w in why.items()]
    if not bench.folder_per_monitor:
        return _one_folder(bench, s, data, runnable, options, skipped)
    if not several:
        return _single(bench, s, data, runnable[0], options[runnable[0]])
    return _every(bench, s, data, runnable, options, skipped)


def _single(bench: Benchmark, s: EvalSettings, data, name: str, options: dict) -> int:
    result = _monitor_into(bench, s, data, name, options, None, s.out, lazy=True)
    bench.said(s, result, s.out)
    return 0


def _monitor_into(bench: Benchmark, s: EvalSettings, data, name: str, options: dict, prepared, out: Path,
                  lazy: bool = False) -> MonitorResult:
    """One monitor into its folder: claimed first, read back when finished, else run (``lazy``: the model is
    loaded here, after the claim)."""
    ident = bench.identity(s, data, name, {name: options})
    written = bench.written or (*bench.result_files([name]), "report.md", IDENTITY_FILE)
    existed, state = out.exists(), None
    try:
        with open_folder(out, ident, bench.result_files([name]), ways=bench.ways, fresh=s.fresh, written=written,
                         former=bench.former_identities(s, data, name, {name: options}),
                         outdated=bench.outdated_identities(s, data, name, {name: options})) as state:
            done = read_back(out, name) if state == "resume" else None
            if done is not None:
                return done
            if lazy:
                prepared = bench.prepare(s, data, [name])
                confirm_late(out, ident, bench.late_identity(prepared))
                for n, w in bench.cannot_run(s, prepared, [name]).items():
                    raise UserError(f"--monitor {n}: {w}")
            result = bench.run_monitor(s, data, name, options, prepared, out)
            write_monitor_files(out, result, bench)
    except UserError:
        if lazy and state == "new":
            _unclaim(out, existed)
        raise
    return result


def _unclaim(out: Path, existed: bool) -> None:
    """A folder claimed for a monitor that then cannot run (the model loaded after the claim, as issue 46 item 6
    asks, cannot do what the monitor needs) is left as it was found: bad input writes nothing."""
    (out / IDENTITY_FILE).unlink(missing_ok=True)
    if not existed:
        shutil.rmtree(out, ignore_errors=True)


def _task(benchmark: str, s: EvalSettings, data, group: list[str], options: dict, out: str) -> list[MonitorResult]:
    """A :mod:`.workers` task: the monitors of one group (they need no model), each into its folder (a fresh
    process finds the benchmark by name)."""
    from ego_adr.monitoring.benchmarks import BENCHMARKS

    bench = BENCHMARKS.get(benchmark).make_driver()
    results = [_monitor_into(bench, s, data, n, options[n], None, Path(out) / n) for n in group]
    for r in results:
        r.steps = None  # written already: nothing to carry back
    return results


def _jobs(s: EvalSettings) -> int:
    from ego_adr.monitoring.workers import default_jobs

    if s.jobs is not None and s.jobs < 1:
        raise UserError(f"--jobs {s.jobs}: give 1 or more processes")
    try:
        return s.jobs or default_jobs()
    except ValueError as e:
        raise UserError(f"{e}: unset it or give a whole number") from None


def _every(bench: Benchmark, s: EvalSettings, data, names: list[str], options: dict, skipped: list[str]) -> int:
    """``--monitor all`` (or ``a,b``): each monitor into ``OUT/<monitor>/`` (the same folder a single run writes),
    the monitors that need no model as worker tasks (one per :meth:`Benchmark.groups` group) beside the
    benchmark's own (:meth:`Benchmark.beside`), then the summary in ``OUT``."""
    from ego_adr.monitoring.workers import run_tasks

    jobs, out = _jobs(s), s.out
    written = bench.summary_written or (*bench.summary_files, IDENTITY_FILE)
    with open_folder(out, bench.identity(s, data, names, options), bench.summary_files, ways=bench.ways,
                     fresh=s.fresh, written=written, former=bench.former_identities(s, data, names, options),
                     outdated=bench.outdated_identities(s, data, names, options)):
        beside_identity(out, bench.resolved(s, names))
        groups = bench.groups([n for n in names if not bench.registry.get(n).needs_model])
        tasks = [(_task, (bench.spec.name, s, data, g, {n: options[n] for n in g}, str(out))) for g in groups]
        side = bench.beside(s, data, names, options)
        done = run_tasks(tasks + side, jobs)
        got = {r.name: r for rs in done[: len(tasks)] for r in rs}
        rest = [n for n in names if n not in got]
        prepared = bench.prepare(s, data, rest) if rest else None
        cannot = bench.cannot_run(s, prepared, rest) if rest else {}
        skipped = [*skipped, *(f"{n} ({w})" for n, w in cannot.items())]
        names = [n for n in names if n not in cannot]
        for n in (n for n in rest if n not in cannot):
            got[n] = _monitor_into(bench, s, data, n, options[n], prepared, out / n)
        results = [got[n] for n in names]
        for r in results:
            bench.said(s, r, out / r.name)
        bench.finish(s, data, results, out, skipped, prepared, beside=done[len(tasks):])
    return 0


def _one_folder(bench: Benchmark, s: EvalSettings, data, names: list[str], options: dict,
                skipped: list[str]) -> int:
    """Every monitor of the run into one folder (``steps/<monitor>.jsonl``, the benchmark's own files), one
    identity; when the folder's name needs the loaded model, it is claimed right after the load."""
    out = s.out or bench.default_out(s, data, None)
    fresh = s.fresh
    ident = bench.identity(s, data, names, options)
    stack = contextlib.ExitStack()
    with stack:
        if out is not None:
            stack.enter_context(open_folder(out, ident, bench.result_files(names), ways=bench.ways, fresh=fresh,
                                            written=bench.written))
        prepared = bench.prepare(s, data, names)
        late = bench.late_identity(prepared)
        full = bench.full_identity(ident, late)
        if out is None:
            out = bench.default_out(s, data, prepared)
            stack.enter_context(open_folder(out, full, bench.result_files(names), ways=bench.ways, fresh=fresh,
                                            written=bench.written))
        else:
            confirm_late(out, ident, late, full)
        bench.opened(out, full)
        results = []
        for n in names:
            r = bench.run_monitor(s, data, n, options[n], prepared, out)
            write_monitor_files(out, r, bench, steps_name=f"steps/{n}.jsonl", metrics_name=None)
            results.append(r)
        bench.finish(s, data, results, out, skipped, prepared)
    return 0
