"""HelpMeOut on the shared harness (:mod:`ego_adr.monitoring.harness`): ``python -m ego_adr.monitoring evaluate
--benchmark helpmeout --monitor NAME|all --episodes DIR/test.jsonl --out OUT``.

What is HelpMeOut's here: its flags (:class:`Settings`), its splits (the test file, ``train.jsonl`` and
``val.jsonl`` beside it, checked as ``validate`` checks them), the identity of a folder (the keys the former
``helpmeout evaluate`` wrote, so its folders resume), how one monitor is scored (:func:`.evalrun.evaluate`: the
threshold rule on validation, the seeds of a random monitor, the 60-episode subset) and the files it writes
(``outputs.jsonl``, ``steps.jsonl``, ``metrics.json``, ``report.md``). ``--monitor all`` runs every monitor into
``OUT/<monitor>/`` and writes the paper's tables into ``OUT`` (what ``helpmeout summarize OUT/*`` writes).

The LLM monitor is scored on the 60-episode subset whether or not ``--subset`` is given, so a folder's identity
holds ``subset: true`` for it (issue 46 item 5: the same run with and without the flag is one folder); a folder
that an earlier version labelled ``subset: false`` is the same run and resumes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.monitoring.driver import Benchmark, MonitorResult

PAPER_TOKENS = 512  # Table 16
#: Bump when what a monitor folder holds changes (a metric, a file): a folder of another version is refused, so
#: results of older code are never read back as current. A folder written before the key (stage 1 of issue 43) is
#: the same run by an older harness: taken over and redone (:meth:`HelpMeOut.outdated_identities`).
HARNESS_VERSION = "1"


@dataclass(frozen=True)
class Settings:
    episodes: str
    train: str | None = None
    val: str | None = None
    threshold: float | None = None
    tolerance: int = 0
    bootstrap: int = 1000
    seeds: int = 20
    subset: bool = False
    budget_s: float = 5.0
    max_new_tokens: int = PAPER_TOKENS
    templates: str | None = None
    limit: int = 0


@dataclass
class Splits:
    test: list[dict]
    train: list[dict] | None
    val: list[dict] | None
    subset: list[str] | None  # the 60-episode subset's ids (scored apart) when --episodes is a test file


def _sibling(path: str, name: str) -> Path | None:
    cand = Path(path).with_name(name)
    return cand if cand.is_file() and cand.resolve() != Path(path).resolve() else None


def checked_episodes(path: str | Path, what: str) -> list[dict]:
    """Episodes that ``validate`` accepts, else one line and exit 2."""
    from ego_adr.helpmeout.generator.io import EpisodesFileError, invalid_episodes, load_episodes

    try:
        eps = load_episodes(path)
    except EpisodesFileError as e:
        raise UserError(str(e)) from None
    bad = invalid_episodes(eps)
    if bad:
        eid, problems = bad[0]
        raise UserError(f"{len(bad)} of {len(eps)} {what} episodes in {path} are invalid (first: {eid}: "
                        f"{problems[0]}); `python -m ego_adr.helpmeout validate {path}` lists them")
    return eps


def on_subset(own: Settings, name: str) -> bool:
    """What the run really does: the LLM monitor is always scored on the subset (Table 17)."""
    return bool(own.subset or name == "llm")


class HelpMeOut(Benchmark):
    Settings = Settings
    ways = "pass another --out, or --fresh to start it over"
    written = ("outputs.jsonl", "steps.jsonl", "metrics.json", "report.md", "identity.json")
    summary_written = ("summary.md", "summary.html", "figure3.png", "identity.json")

    def add_arguments(self, e) -> None:
        e.add_argument("--episodes", required=True, help="episodes .jsonl (usually DIR/test.jsonl)")
        e.add_argument("--train", default=None, help="training episodes (default: train.jsonl next to --episodes)")
        e.add_argument("--val", default=None, help="validation episodes for the M3 threshold rule "
                       "(default: val.jsonl next to --episodes)")
        e.add_argument("--threshold", type=float, default=None,
                       help="fix the M3 threshold (default: chosen on validation by Youden's J; Random 0.5)")
        e.add_argument("--tolerance", type=int, default=0, help="steps after the onset still counted on target")
        e.add_argument("--bootstrap", type=int, default=1000, help="stratified bootstrap resamples for the 95%% CIs")
        e.add_argument("--seeds", type=int, default=20, help="random monitor: seeds to average (Table 2: 20)")
        e.add_argument("--subset", action="store_true", help="score only the 60-episode subset (always for llm)")
        e.add_argument("--budget-s", type=float, default=5.0, help="re-planners: planning budget per episode")
        e.add_argument("--max-new-tokens", type=int, default=PAPER_TOKENS,
                       help="llm: new tokens per call (Table 16: 512; a smaller value is recorded in the outputs)")
        e.add_argument("--templates", default=None, help="template folder (default procedures/helpmeout)")
        e.add_argument("--limit", type=int, default=0, help="only the first N episodes (0: all)")

    def load(self, s) -> Splits:
        from ego_adr.helpmeout.evaluation.evalrun import subset_ids

        own: Settings = s.own
        names = self._names(s)
        test = checked_episodes(own.episodes, "test")
        if own.limit:
            test = test[: own.limit]
        train = val = None
        trains = [n for n in names if self.registry.get(n).trains]
        if trains:
            tf = Path(own.train) if own.train else _sibling(own.episodes, "train.jsonl")
            if tf is None:
                raise UserError(f"{trains[0]} trains on the train split: pass --train FILE or keep train.jsonl "
                                f"next to {own.episodes}")
            train = checked_episodes(tf, "training")
        if own.threshold is None and any(n != "random" for n in names):
            vf = Path(own.val) if own.val else _sibling(own.episodes, "val.jsonl")
            if vf is None:
                raise UserError(f"the M3 threshold is chosen on the validation split: pass --val FILE, keep "
                                f"val.jsonl next to {own.episodes}, or fix it with --threshold X")
            val = checked_episodes(vf, "validation")
        sub = subset_ids(test) if Path(own.episodes).name == "test.jsonl" or any(on_subset(own, n) for n in names) \
            else None
        return Splits(test, train, val, sub)

    def _names(self, s) -> list[str]:
        from ego_adr.monitoring.harness import monitors_to_run

        return monitors_to_run(self.registry, s.monitor)

    def identity(self, s, data, monitor, options, former: bool = False) -> dict:
        """The keys the former ``helpmeout evaluate`` wrote, in its order (its folders resume); a folder of several
        monitors holds ``all`` as asked (issue 46 item 1; ``former``: the resolved list, as before)."""
        own: Settings = s.own
        one = isinstance(monitor, str)
        several = "all" if s.every and not former else list(monitor)
        ident = {"helpmeout": "evaluate", "cmd": "evaluate",
                 **({"monitor": monitor} if one else {"monitors": several}),
                 "episodes": own.episodes, "train": own.train, "val": own.val, "threshold": own.threshold,
                 "tolerance": own.tolerance, "bootstrap": own.bootstrap, "seeds": own.seeds,
                 "subset": on_subset(own, monitor) if one else own.subset, "budget_s": own.budget_s,
                 "model": s.model.model, "backend": s.model.backend, "base_url": s.model.base_url}
        if s.model.device is not None:  # left out it is not in the identity (folders of before --device resume)
            ident["device"] = s.model.device
        ident |= {"max_new_tokens": own.max_new_tokens, "cache_dir": s.cache_dir, "templates": own.templates,
                  "limit": own.limit}
        # a monitor's --monitor-options, one key each (no HelpMeOut monitor declares one yet)
        ident |= {f"option.{n}.{k}": v for n, o in options.items() for k, v in o.items()}
        return ident | {"harness_version": HARNESS_VERSION}

    def former_identities(self, s, data, monitor, options) -> list[dict]:
        if not isinstance(monitor, str):  # a summary folder that lists what all resolved to
            return [self.identity(s, data, monitor, options, former=True)] if s.every else []
        ident = self.identity(s, data, monitor, options)
        return [ident | {"subset": False}] if monitor == "llm" and not s.own.subset else []

    def resolved(self, s, names: list[str]) -> dict:
        return {"resolved_monitors": list(names)} if s.every else {}

    def outdated_identities(self, s, data, monitor, options) -> list[dict]:
        """The same run as a harness before :data:`HARNESS_VERSION` wrote it (no such key): redone."""
        return [{k: v for k, v in i.items() if k != "harness_version"}
                for i in (self.identity(s, data, monitor, options), *self.former_identities(s, data, monitor, options))]

    def result_files(self, names) -> tuple[str, ...]:
        return ("outputs.jsonl", "metrics.json")

    def prepare(self, s, data, names):
        """The model of the monitors that need one (loaded once)."""
        if not any(self.registry.get(n).needs_model for n in names):
            return None
        from ego_adr.models import load_model

        m = s.model
        extra = {"base_url": m.base_url} if m.base_url else {}
        return load_model(m.model, backend=m.backend, device=m.device or "auto", **extra)

    def run_monitor(self, s, data: Splits, name: str, options: dict, prepared, out: Path) -> MonitorResult:
        from ego_adr.helpmeout.evaluation.evalrun import evaluate
        from ego_adr.helpmeout.evaluation.report import report_markdown
        from ego_adr.helpmeout.monitors import build_monitor

        own: Settings = s.own
        spec = self.registry.get(name)
        kw: dict = {"cache_dir": str(out), "budget_s": own.budget_s, "templates_dir": own.templates, **options}
        episodes, val = data.test, data.val
        if on_subset(own, name):
            from ego_adr.helpmeout.evaluation.evalrun import subset_ids

            keep = set(data.subset or ())
            episodes = [ep for ep in episodes if ep["id"] in keep]
            if val:
                val = [ep for ep in val if ep["id"] in set(subset_ids(val))]
        if spec.needs_model:
            kw.update(model=prepared, cache_path=str(Path(s.cache_dir or out) / "stage_cache.sqlite"),
                      backend=s.model.backend, max_new_tokens=own.max_new_tokens)
        metrics, rows, steps = evaluate(spec, episodes, build=lambda seed: build_monitor(name, seed=seed, **kw),
                                        val=val, train=data.train, threshold=own.threshold,
                                        tolerance=own.tolerance, bootstrap=own.bootstrap, seeds=own.seeds,
                                        subset=None if on_subset(own, name) else data.subset, progress=not s.quiet)
        metrics.update({"episodes_file": str(own.episodes), "on_subset": on_subset(own, name)})
        if spec.needs_model:
            metrics["model"] = s.model.model
            metrics["backend"] = s.model.backend
            if own.max_new_tokens != PAPER_TOKENS:
                metrics["deviations"] = [f"max_new_tokens {own.max_new_tokens} (paper: {PAPER_TOKENS})"]
        return MonitorResult(name, metrics, steps, report_markdown(name, metrics),
                             {"outputs.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})

    def metrics_text(self, metrics: dict) -> str:
        return json.dumps(metrics, indent=2, sort_keys=True, default=float) + "\n"

    def said(self, s, result: MonitorResult, out: Path) -> None:
        from ego_adr.helpmeout.evaluation.report import TABLE2_HEADER, table2_rows

        m = result.metrics
        print(TABLE2_HEADER + "\n" + table2_rows(result.name, m))  # the row under its header (issue 28 item 9)
        again = " (finished before: read back, not redone)" if result.done_before else ""
        print(f"-> {out}/metrics.json, report.md ({m['seconds']} s; M3 threshold: {m['threshold_rule']}){again}")

    def finish(self, s, data, results, out: Path, not_run: list[str], prepared, beside=None) -> None:
        """``--monitor all``: the paper's tables of these monitors (``helpmeout summarize``'s) in ``OUT``."""
        from ego_adr.helpmeout.evaluation.summary import summarize
        from ego_adr.helpmeout.evaluation.summary_html import write_summary_html

        print(summarize([r.metrics for r in results], out))
        write_summary_html(out)
        print(f"\n-> {out}/summary.md, summary.html, figure3.png" + (f" (not run: {', '.join(not_run)})"
                                                                    if not_run else ""))
