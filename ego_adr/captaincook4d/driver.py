"""``captaincook4d-complete`` and ``captaincook4d-o`` on the one harness (:mod:`ego_adr.monitoring.harness`):
``python -m ego_adr.monitoring evaluate --benchmark captaincook4d-complete --monitor NAME|a,b|all --data-root DIR
--out OUT``.

What is CaptainCook4D's here: its flags (:class:`Settings`: the data root, the omission rule), its splits read and
checked before anything is written (:func:`.benchmark.load`: bad input is one line naming the file and the item,
exit 2), the identity of a folder (the benchmark, the rule, the digest of every file read, the monitor and its
options: the same identity resumes, another refuses), how one monitor is run (:func:`.evaluate.run_one`: fitted on
train, its thresholds and checks chosen on validation, scored on test) and its files: ``steps.jsonl`` (test rows),
``validation_steps.jsonl`` (the rows the choices were made on), ``metrics.json`` (written last), ``report.md``,
``timing.json`` (seconds and the load average when the monitor began: not part of the results, so ``metrics.json`` has the same bytes on every run). ``--monitor
all`` (or ``a,b``) runs each monitor into ``OUT/<monitor>/`` and writes ``summary.json``/``summary.md``
(:mod:`.summary`) in ``OUT``.

**A monitor that needs a model** (``prego``, ``prego-lm``) runs with the house's model flags (``--model``,
``--backend``, ``--base-url``, ``--device``), as on the step streams: the name and device checked before any data
is read, the folder's identity holding the model keys the step streams record (:data:`MODEL_KEYS`), the model
loaded once in :meth:`CaptainCook4D.prepare` -- after the folder is claimed, so a refusal never waits for a load --
and checked there at once (``check_model``: ``prego-lm`` needs token probabilities); a model that cannot serve is
one line before any result is written (the folder holds only its identity, which the corrected command takes).
Without ``--model`` such a monitor is not run (named alone: one line, exit 2; in ``all``: listed with why).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import registry as CR
from ego_adr.captaincook4d import sources as S
from ego_adr.captaincook4d.summary import VALIDATION, steps_text
from ego_adr.monitoring.driver import METRICS, Benchmark, MonitorResult

#: the model settings a folder's identity holds when one of its monitors needs a model (the step streams' keys)
MODEL_KEYS = ("model", "backend", "base_url")
VERSION = "1"  # bump when a change alters what a folder holds: older folders then refuse instead of resuming
#: what a monitor's ``stats()`` may hold that differs from run to run (timing.json keeps it, metrics.json not)
VOLATILE = ("train_seconds", "from_cache")
RESULT_FILES = ("steps.jsonl", VALIDATION, METRICS, "report.md", "timing.json")


@dataclass(frozen=True)
class Settings:
    data_root: str
    missing_target: str = "graph"


@dataclass(frozen=True)
class Loaded:
    """The benchmark's splits and the digest of the files they were read from (part of every identity)."""

    data: B.Data
    sha256: str


def files_read(root: str | Path, src: S.Sources) -> list[Path]:
    """Every file :func:`.benchmark.load` reads, in a fixed order."""
    rels = [S.ERRORS, S.DESCRIPTIONS, S.RECIPE_STEPS, S.COMPLETE, S.SPLIT,
            *(f"{S.GRAPHS}/{r}.json" for r in sorted(src.recipe_steps))]
    return [Path(root).expanduser() / r for r in rels]


def digest(root: str | Path, src: S.Sources) -> str:
    h = hashlib.sha256()
    for p in files_read(root, src):
        h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


class CaptainCook4D(Benchmark):
    """Both CaptainCook4D benchmarks (module docstring); the spec's name says which."""

    Settings = Settings
    written = ("summary.json", "summary.md", *RESULT_FILES)

    def add_arguments(self, e) -> None:
        e.add_argument("--data-root", required=True, help="folder that `python -m ego_adr.monitoring download --out "
                       f"DIR` wrote ({S.CC4D_DIR}/, {S.DTGL_DIR}/)")
        e.add_argument("--missing-target", default="graph", choices=B.MISSING_TARGETS,
                       help="where a skipped step's omission is a positive: graph (default: the first step done that "
                       "needs it in the recipe's graph, else the recording's end) or end (always the end; the labels "
                       "then read no graph)")

    def load(self, s) -> Loaded:
        data = B.load(s.own.data_root, self.spec.name, s.own.missing_target)
        return Loaded(data, digest(s.own.data_root, data.sources))

    def check(self, s, names: list[str], options: dict[str, dict]) -> None:
        """The model's name and device, before any data is read (as the step streams check them)."""
        if s.model.model and any(self.registry.get(n).needs_model for n in names):
            from ego_adr.models.loading import check_device, check_model_name

            if s.model.device:
                check_device(s.model.device, s.model.backend)
            check_model_name(s.model.model, s.model.backend)

    def not_run(self, s, names: list[str]) -> dict[str, str]:
        why = {n: "needs --model NAME (e.g. --model smollm2-135m --backend llamacpp)" for n in names
               if self.registry.get(n).needs_model and not s.model.model}
        return why | {n: r for n in names if n not in why and (r := CR.unavailable(n))}

    def _model_keys(self, s, names) -> dict:
        needs = any(self.registry.get(n).needs_model for n in names)
        return {k: getattr(s.model, k) for k in MODEL_KEYS} if needs else {}

    def identity(self, s, data: Loaded, monitor, options, former: bool = False) -> dict:
        ident = {"command": "monitoring evaluate", "benchmark": self.spec.name, "stream": "oracle",
                 "missing_target": s.own.missing_target, "data_sha256": data.sha256, "version": VERSION}
        if isinstance(monitor, str):
            return (ident | {"monitor": monitor} | {f"option.{k}": v for k, v in options[monitor].items()}
                    | self._model_keys(s, [monitor]))
        from ego_adr.captaincook4d.choice import RULE

        if former:  # as the benchmark's first version spelled it: the resolved list and options
            return ident | {"monitors": list(monitor), "options": options, "choice": RULE} | self._model_keys(s,
                                                                                                           monitor)
        # issue 46 item 1: `all` as asked (what it resolved to depends on the packages installed; written beside
        # the identity by `resolved`) and the options as given, so a monitor that joins `all` later runs into its
        # own folder while the others are read back
        given = dict(sorted((k.strip().replace("-", "_"), v) for k, _, v in
                            (o.partition("=") for o in s.monitor_options)))
        asked = "all" if s.every else list(monitor)
        return ident | {"monitors": asked, "options": given, "choice": RULE} | self._model_keys(s, monitor)

    def former_identities(self, s, data: Loaded, monitor, options) -> list[dict]:
        """A folder of several monitors as this benchmark first spelled it (the resolved list): resumed and
        re-labelled."""
        return [] if isinstance(monitor, str) else [self.identity(s, data, monitor, options, former=True)]

    def resolved(self, s, names: list[str]) -> dict:
        return {"resolved_monitors": list(names)} if s.every else {}

    def prepare(self, s, data: Loaded, names: list[str]):
        """The model of the monitors that need one, loaded once (after the folder is claimed) behind the stage
        cache, and checked for what each of them asks of it (``check_model``); None when none needs one."""
        needs = [n for n in names if self.registry.get(n).needs_model]
        if not needs:
            return None
        from ego_adr.models.loading import ModelSettings, load_vlm

        model = load_vlm(ModelSettings(model=s.model.model, backend=s.model.backend, device=s.model.device or "auto",
                                       base_url=s.model.base_url, cache_dir=s.cache_dir))
        for n in needs:
            getattr(self.registry.factory(n), "check_model", lambda m: None)(model)
        return model

    def result_files(self, names) -> tuple[str, ...]:
        return ("steps.jsonl", METRICS)

    def groups(self, names: list[str]) -> list[list[str]]:
        """Monitors that reuse each other's fits (the step streams' ``fits_with``) share a process; the costliest
        groups first, so a pool of workers ends together (:data:`COST`)."""
        out: dict[str, list[str]] = {}
        for n in names:
            out.setdefault(self.registry.get(n).fits_with or n, []).append(n)
        return sorted(out.values(), key=lambda g: -sum(COST.get(n, 1) for n in g))

    def run_monitor(self, s, data: Loaded, name: str, options: dict, prepared, out: Path) -> MonitorResult:
        from ego_adr.captaincook4d.evaluate import run_one
        from ego_adr.captaincook4d.summary import monitor_report
        from ego_adr.store import cache_scope

        t0, load = time.perf_counter(), os.getloadavg()[0]
        with cache_scope(s.cache_dir) if s.cache_dir else contextlib.nullcontext():
            model = prepared if self.registry.get(name).needs_model else None
            res = run_one(name, [data.data], options, data.sha256, s.own.missing_target, model,
                          progress=model is not None and not s.quiet)[0]
        rows, val, own = res.pop("rows"), res.pop("validation_rows"), res.pop("files")
        fit = res.pop("fit_cpu_seconds")
        volatile = {k: res["stats"].pop(k) for k in VOLATILE if k in res["stats"]}  # seconds, cache hits
        seconds = round(time.perf_counter() - t0, 2)
        metrics = {"benchmark": self.spec.name, "missing_target": s.own.missing_target, **res}
        if not s.quiet:  # progress: each monitor as it finishes (under --jobs, from its worker)
            print(f"{self.spec.name}: {name} fitted, chosen on validation and scored ({seconds} s)", file=sys.stderr,
                  flush=True)
        timing = {"seconds": seconds, "fit_cpu_seconds": fit, "load_average": round(load, 2), **volatile}
        files = {VALIDATION: steps_text(val), "timing.json": json.dumps(timing) + "\n",
                 **{k: json.dumps(v, indent=1, ensure_ascii=False) + "\n" for k, v in own.items()}}
        return MonitorResult(name, metrics, steps=rows, report=monitor_report(metrics), seconds=seconds, files=files)

    def said(self, s, result: MonitorResult, out: Path) -> None:
        if s.quiet:
            return
        m, t = result.metrics, result.metrics["test"]
        again = " (finished before: read back, not redone)" if result.done_before else ""
        print(f"{result.name}: validation objective {m['validation']['objective']:.4f}; test macro F1 "
              f"{100 * t['macro_f1']:.1f}, F1b {100 * t['balanced_f1']:.1f} -> {out}/{METRICS}{again}", flush=True)

    def finish(self, s, data: Loaded, results, out: Path, not_run: list[str], prepared, beside=None) -> None:
        from ego_adr.captaincook4d.summary import write_summary

        text = write_summary(out, data.data, [r.metrics for r in results], not_run, s.own.missing_target)
        if not s.quiet:
            print("\n" + text + f"\n-> {out}/summary.json, summary.md", flush=True)


#: Rough CPU seconds of a cold fit (``fit_cpu_seconds`` in a run's timing.json, 2-core machine); only the order of
#: the worker tasks reads it, never a result.
COST = {"dtgl-do": 19, "sgt-oneclass": 12, "seq2seq-oneclass": 11, "ngram-text": 10, "procedure-learned": 2}
