"""What the step-stream benchmarks' drivers share on the one harness (:mod:`ego_adr.monitoring.harness`): their
flags (:class:`Settings`, :meth:`StepStreams.add_arguments`), the checks that need no data, PREGO's alias flags,
the monitors that cannot run and why, the model, the groups of monitors that share fits, and the nested
selection's folds as worker tasks beside the monitors' (:meth:`StepStreams.beside`, read back by
:meth:`StepStreams.selection`). :class:`~ego_adr.online_mistakes.evaluate.CutStreams` (Assembly101-O, EPIC-Tent-O)
and :class:`~ego_adr.online_mistakes.complete_eval.CompleteStreams` (their complete trials) add their splits,
identities, how one monitor is scored and the summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ego_adr.errors import UserError
from ego_adr.monitoring.driver import Benchmark
from ego_adr.monitoring.next_step_model import HIDDEN, MAX_EPOCHS
from ego_adr.store import check_writable_dir

ALIASES = ("decoding", "samples", "temperature", "max_new_tokens")  # prego's flags: aliases of its options
#: Options a monitor gained after folders of it were written, with the value that is what it did before: a folder
#: whose identity lacks the key is the same run at that value, resumed and re-labelled (not refused).
LATER_OPTIONS = {("prego-lm", "candidates"): "taxonomy", ("stacked", "hidden"): HIDDEN,
                 ("stacked", "max_epochs"): MAX_EPOCHS}


#: A monitor's ``stats`` that follow the cache and the clock, not the data (``dtgl-do``'s graph read from the
#: cache or trained, and how long that took): kept in ``timing.json``, out of ``metrics.json`` and ``report.md``.
VOLATILE_STATS = ("from_cache", "train_seconds")
TIMING = "timing.json"


def timing_apart(res: dict, seconds: float) -> tuple[dict, str]:
    """``res`` (a monitor's metrics) without what varies with the cache state and the clock, and ``timing.json``'s
    text holding it (issue 46 item 3: ``--jobs N`` and a warm or cold cache write the same result files)."""
    stats = res.get("stats") or {}
    moved = {k: stats[k] for k in VOLATILE_STATS if k in stats}
    if moved:
        res = res | {"stats": {k: v for k, v in stats.items() if k not in moved}}
    return res, json.dumps({"seconds": seconds, **({"stats": moved} if moved else {})}, indent=1)


def _model(s):
    """The model of the monitors that need one (``--model``/``--backend``/``--base-url``/``--device``)."""
    from ego_adr.models.loading import ModelSettings, load_vlm

    m = s.model
    return load_vlm(ModelSettings(model=m.model, backend=m.backend, device=m.device or "auto", base_url=m.base_url,
                                  cache_dir=s.cache_dir))


@dataclass(frozen=True)
class Settings:
    data_root: str
    stream: str = "oracle"
    partial: bool = False
    corrections: str | None = None
    decoding: str | None = None
    samples: int | None = None
    temperature: float | None = None
    max_new_tokens: int | None = None
    selection_seeds: str | None = None


class StepStreams(Benchmark):
    """What the step-stream benchmarks share on the harness (module docstring)."""

    Settings = Settings
    written = ("steps.jsonl", "metrics.json", "report.md", "prompts.json", "timing.json", "identity.json")
    summary_written = ("summary.json", "summary.md", "timing.json", "identity.json")

    def cut_of(self, s) -> str:
        """The cut benchmark whose step taxonomy and training set a run reads (itself, for a cut one)."""
        return s.benchmark

    def add_arguments(self, e) -> None:
        from ego_adr.online_mistakes.data.complete import COMPLETE, CORRECTIONS
        from ego_adr.online_mistakes.data.cut import STREAMS
        from ego_adr.online_mistakes.monitors.prego import DECODINGS
        from ego_adr.online_mistakes.selection import OUTER_SEEDS

        e.add_argument("--stream", default="oracle", metavar="S",
                       help=f"{', '.join(STREAMS.names())} (default oracle), or a file in PREGO's predictions format "
                       '({"<video>": {"pred": [step ids]}}) holding a recogniser\'s output on the test videos')
        e.add_argument("--partial", action="store_true",
                       help="--stream FILE covers only some test videos: score those (coverage in metrics.json, the "
                       "others listed, no comparison with published full-benchmark rows)")
        e.add_argument("--data-root", required=True,
                       help="folder that `python -m ego_adr.monitoring download --out DIR` wrote (dtgl/, prego/)")
        e.add_argument("--corrections", default=None, choices=CORRECTIONS.names(),
                       help=f"{', '.join(COMPLETE.names())}: a correction step is scored as correct (default) or left out "
                       "of the scores (exclude; the monitor still sees it)")
        e.add_argument("--decoding", default=None, choices=tuple(DECODINGS),
                       help="prego: alias of --monitor-option decoding=...; PREGO's decoding, numeric (default: its "
                       "numeric-symbol run, 1 greedy reply of <= 4 tokens) or sampled (its emoji runs: 25 replies "
                       "at temperature 0.6, top-p 0.9, <= 8 tokens); docs/online_mistakes.md")
        e.add_argument("--samples", type=int, default=None, help="prego: replies per step (default: the --decoding's)")
        e.add_argument("--temperature", type=float, default=None,
                       help="prego: sampling temperature, 0 greedy (default: the --decoding's)")
        e.add_argument("--max-new-tokens", type=int, default=None,
                       help="prego: tokens per reply (default: the --decoding's, PREGO's 4 numeric / 8 sampled)")
        e.add_argument("--selection-seeds", default=None, metavar="S1,S2,...",
                       help="--monitor all or a list a,b: the outer-fold seeds of the nested selection (default "
                       f"{','.join(map(str, OUTER_SEEDS))}, fixed in advance); distinct whole numbers, recorded in "
                       "summary.json and the folder's identity")

    def option_aliases(self, s) -> list[tuple[str, str, str]]:
        """PREGO's older flags, aliases of its options (``--decoding`` is ``--monitor-option decoding=...``)."""
        own: Settings = s.own
        return [(k, str(v), f"--{k.replace('_', '-')} {v}") for k in ALIASES if (v := getattr(own, k)) is not None]

    def not_run(self, s, names: list[str]) -> dict[str, str]:
        """A monitor that needs a model when no ``--model`` is given, one whose package is missing
        (:func:`~ego_adr.online_mistakes.registry.not_runnable`)."""
        from ego_adr.online_mistakes.registry import not_runnable

        if not s.every and len(names) == 1 and self.registry.get(names[0]).needs_model and not s.model.model:
            return {names[0]: "needs --model NAME (an alias, hub id or folder; --model tiny runs offline)"}
        return not_runnable("all", names, bool(s.model.model))

    def check(self, s, names: list[str], options: dict[str, dict]) -> None:
        """The flags that need no data: the cache folder, device and model name, the selection's seeds, a
        ``--partial`` without a file."""
        from ego_adr.models.loading import check_device, check_model_name
        from ego_adr.online_mistakes.data import cut as D

        own: Settings = s.own
        if s.cache_dir:
            check_writable_dir(s.cache_dir, "--cache-dir")
        if s.model.device:
            check_device(s.model.device, s.model.backend)
        if s.model.model:
            check_model_name(s.model.model, s.model.backend)
        D.spec(self.cut_of(s))
        self.seeds(s)
        if own.partial and own.stream in D.STREAMS:
            raise UserError(f"--partial is for a --stream FILE that covers some test videos; {own.stream} covers all")

    def seeds(self, s) -> tuple[int, ...]:
        """``--selection-seeds``, else the selection's seeds fixed in advance. The nested selection runs wherever
        several monitors do (``--monitor all`` or a list ``a,b``), so the flag is taken there, and refused for one
        monitor (it would change nothing)."""
        from ego_adr.online_mistakes.selection import OUTER_SEEDS, check_seeds

        text = s.own.selection_seeds
        if text is None:
            return OUTER_SEEDS
        if not s.every and len({n.strip() for n in s.monitor.split(",") if n.strip()}) < 2:
            raise UserError(f"--selection-seeds {text}: the nested selection runs over several monitors only "
                            "(--monitor all, or a list a,b)")
        try:
            return check_seeds([x.strip() for x in str(text).split(",") if x.strip()])
        except ValueError as e:
            raise UserError(f"--selection-seeds {text!r}: {e}; give distinct whole numbers, e.g. 1,2,3,4,5") from None

    def check_inputs(self, s, train, names: list[str], options: dict[str, dict]) -> None:
        """What each monitor reads beside the training set is there (e.g. PREGO's example file) and its options fit
        the run (e.g. a ``dtgl-do`` config the benchmark has), before anything is written; ``train`` as the run
        gives it (:func:`~ego_adr.online_mistakes.fitting.configured`)."""
        for n in names:
            check = getattr(self.registry.factory(n), "check_inputs", None)
            if check is not None:
                check(train, s.own.data_root, options[n])

    def prepare(self, s, data, names: list[str]):
        """The model of the monitors that need one (loaded once), else None."""
        return _model(s) if any(self.registry.get(n).needs_model for n in names) else None

    def cannot_run(self, s, prepared, names: list[str]) -> dict[str, str]:
        """What the loaded model cannot do for a monitor (``prego-lm`` needs next-token likelihoods)."""
        why = {}
        for n in names if prepared is not None else ():
            try:
                getattr(self.registry.factory(n), "check_model", lambda m: None)(prepared)
            except UserError as e:
                why[n] = str(e).removeprefix(f"--monitor {n}: ")
        return why

    def asked(self, s, names: list[str]) -> tuple[str | list[str], dict[str, str]]:
        """The monitors and options of a folder of several as the user asked for them (issue 46 item 1): ``all``
        as typed (what it resolved to depends on the packages installed: a package installed later adds a monitor,
        which then runs into its own folder while the others are read back), and the options as given
        (``--monitor-option`` and PREGO's alias flags; each monitor's folder holds its resolved ones)."""
        given = {k.strip().replace("-", "_"): v for k, _, v in (o.partition("=") for o in s.monitor_options)}
        given |= {k: v for k, v, _ in self.option_aliases(s)}
        return ("all" if s.every else list(names)), dict(sorted(given.items()))

    def former_identities(self, s, data, monitor, options: dict[str, dict]) -> list[dict]:
        """A summary folder as main wrote it before issue 46 item 1 (the resolved list), and a monitor's folder
        written before one of its :data:`LATER_OPTIONS` existed, where the option is at its former behaviour:
        resumed and re-labelled."""
        if not isinstance(monitor, str):
            return [self.identity(s, data, monitor, options, former=True)]
        given = options.get(monitor, {})
        later = {f"option.{k}" for (m, k), v in LATER_OPTIONS.items() if m == monitor and given.get(k) == v}
        ident = self.identity(s, data, monitor, options)
        return [{k: v for k, v in ident.items() if k not in later}] if later else []

    def resolved(self, s, names: list[str]) -> dict:
        return {"resolved_monitors": list(names)} if s.every else {}

    def model_keys(self, s, names: list[str]) -> dict:
        """The model's flags, part of the identity of a folder whose monitors need one."""
        if not any(self.registry.get(m).needs_model for m in names):
            return {}
        return {"model": s.model.model, "backend": s.model.backend, "base_url": s.model.base_url}

    def result_files(self, names: list[str]) -> tuple[str, ...]:
        from ego_adr.online_mistakes.fitting import RESULT_FILES

        return RESULT_FILES

    def steps_text(self, rows: list[dict]) -> str:
        """``steps.jsonl`` as the step streams have always written it (keys sorted)."""
        return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)

    def groups(self, names: list[str]) -> list[list[str]]:
        """Monitors that reuse each other's fits share a process (:func:`~ego_adr.online_mistakes.workers.groups`)."""
        from ego_adr.online_mistakes.workers import groups

        return groups(names)

    def beside(self, s, data, names: list[str], options: dict) -> list[tuple]:
        """The nested selection's folds not in the fold cache, as worker tasks beside the monitors'
        (:func:`~ego_adr.online_mistakes.selection.plan`); :meth:`selection` reads their results."""
        from ego_adr.online_mistakes import selection

        opts = selection.options_of([n for n in names if not self.registry.get(n).needs_model], options)
        self._plan = (opts, *selection.plan(data.train, list(opts), opts, self.seeds(s)))
        return [t for *_, t in self._plan[3]]

    def selection(self, s, data, beside: list) -> tuple[dict, dict]:
        """``summary.json``'s ``selection`` (:func:`~ego_adr.online_mistakes.selection.record` of the folds kept
        and those :meth:`beside` computed) and the summary's ``timing.json``: how many folds were read from the
        fold cache and how many computed, which follows the cache state, not the data."""
        from ego_adr.online_mistakes import selection

        opts, have, keys, todo = self._plan
        new = {(seed, j, n): rows for (_, (seed, j), _), res in zip(todo, beside) for n, rows in res.items()}
        sel = selection.record(data.train, list(opts), opts, self.seeds(s), found=(have, keys, new))
        return {k: v for k, v in sel.items() if k != "fold_cache"}, {"fold_cache": sel["fold_cache"]}


