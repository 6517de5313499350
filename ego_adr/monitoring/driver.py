"""What a benchmark room gives the harness (:mod:`ego_adr.monitoring.harness`): a :class:`Benchmark` subclass, named
by its spec's ``driver``, and the :class:`MonitorResult` of each monitor it runs.

Why hooks and not a harness per benchmark: the order of work (checks before data, the folder's identity before the
model, fit on training only, one observation at a time, ``steps.jsonl`` then ``metrics.json``, resume, workers) is
the same for every benchmark and is where the bugs were (a video-stream folder of other settings was resumed as
the new settings'; a model was loaded before a refusal), so it exists once; what differs (flags, splits, identity,
how a monitor is scored, the summary) is a room's, in its hooks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ego_adr.monitoring.settings import EvalSettings, NoSettings

METRICS = "metrics.json"


@dataclass
class MonitorResult:
    """What one monitor's run leaves: its metrics, its per-step rows, its report and any other files."""

    name: str
    metrics: dict
    steps: list[dict] | None = None  # None: read back from a finished folder
    report: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # file name -> text, written before metrics.json
    seconds: float | None = None
    done_before: bool = False


class Benchmark:
    """What a benchmark gives the harness; one subclass per benchmark room (its spec's ``driver``).

    The hooks in the order the harness calls them: :meth:`add_arguments` (its flags; their ``dest`` names are
    the fields of :attr:`Settings`), :meth:`option_aliases` (its own flags that spell a monitor option),
    :meth:`not_run` (monitors left out, each with why), :meth:`check` (flags that need no data), :meth:`load`
    (its splits), :meth:`check_data` (what needs the data), :meth:`identity`, :meth:`prepare` (the model, once),
    :meth:`late_identity`, :meth:`cannot_run`, :meth:`run_monitor`, :meth:`said` and :meth:`finish`."""

    Settings: type = NoSettings
    folder_per_monitor = True
    ways: str | None = None  # the ways out of a refusal (None: folders' default)
    written: tuple[str, ...] = ()  # what --fresh discards in a monitor's folder (empty: result_files, report.md,
    #                                  identity.json) or, for a one-folder benchmark, in its folder
    summary_files: tuple[str, ...] = ("summary.json", "summary.md")  # the results of several monitors' folder
    summary_written: tuple[str, ...] = ()  # what --fresh discards in that folder (empty: summary_files, identity)

    def __init__(self, spec) -> None:
        self.spec = spec
        self.registry = spec.monitor_registry()

    # -- the command line -----------------------------------------------------------------------------------------
    def add_arguments(self, parser) -> None:
        """Its own flags (the harness adds the shared ones:
        :func:`ego_adr.monitoring.settings.add_common_arguments`)."""

    def out_required(self) -> bool:
        return True

    def option_aliases(self, s: EvalSettings) -> list[tuple[str, str, str]]:
        """Flags of its own that set a monitor option, as ``(option, value as text, how the user wrote it)``:
        checked with ``--monitor-option`` (one option given twice with two values is refused)."""
        return []

    # -- before any data ------------------------------------------------------------------------------------------
    def check(self, s: EvalSettings, names: list[str], options: dict[str, dict]) -> None:
        """Every check that needs no data (a :class:`~ego_adr.errors.UserError`: one line, exit 2)."""

    def load(self, s: EvalSettings) -> Any:
        """Its splits (episodes to fit on, to choose on, to score on), checked."""

    def check_data(self, s: EvalSettings, data: Any, names: list[str], options: dict[str, dict]) -> None:
        """Every check that needs the data (what a monitor reads beside it is there, its options fit the data):
        before the folder is claimed, so a refusal writes nothing."""

    def not_run(self, s: EvalSettings, names: list[str]) -> dict[str, str]:
        """Monitors of ``names`` that will not run, each with why (``all`` lists them as not run)."""
        return {n: "needs --model" for n in names if self.registry.get(n).needs_model and not s.model.model}

    def cannot_run(self, s: EvalSettings, prepared: Any, names: list[str]) -> dict[str, str]:
        """Monitors of ``names`` that the loaded model cannot serve, each with why (known only once ``prepared``):
        named alone, one line and exit 2; within ``all``, listed as not run."""
        return {}

    # -- the folder ------------------------------------------------------------------------------------------------
    def identity(self, s: EvalSettings, data: Any, monitor: str | list[str], options: dict[str, dict]) -> dict:
        """What a folder holds: one monitor's results (``monitor`` its name) or several (the list); ``options``
        are the resolved ``--monitor-option``s of each monitor (part of what the folder holds)."""
        raise NotImplementedError

    def former_identities(self, s: EvalSettings, data: Any, monitor: str | list[str],
                          options: dict[str, dict]) -> list[dict]:
        """Older spellings of the same run's identity (a folder written so resumes and is re-labelled)."""
        return []

    def outdated_identities(self, s: EvalSettings, data: Any, monitor: str | list[str],
                            options: dict[str, dict]) -> list[dict]:
        """Identities of the same settings written by an older harness (e.g. before its ``harness_version`` key):
        such a folder is taken over and its results redone, never read back."""
        return []

    def resolved(self, s: EvalSettings, names: list[str]) -> dict:
        """Keys written into a folder of several monitors' ``identity.json`` beside its identity, never compared
        (e.g. what ``all`` resolved to on this machine, which a package installed later changes)."""
        return {}

    def result_files(self, names: list[str]) -> tuple[str, ...]:
        """Files whose presence means a folder holds results of these monitors."""
        return ("steps.jsonl", METRICS)

    def default_out(self, s: EvalSettings, data: Any, prepared: Any) -> Path | None:
        """The folder when ``--out`` is not given (None: not known until ``prepared``)."""
        return None

    # -- the run ---------------------------------------------------------------------------------------------------
    def prepare(self, s: EvalSettings, data: Any, names: list[str]) -> Any:
        """What the monitors share and is costly (a model), once; called only after the folder is claimed."""

    def late_identity(self, prepared: Any) -> dict:
        """Identity keys known only once ``prepared`` (checked against the folder right after)."""
        return {}

    def full_identity(self, early: dict, late: dict) -> dict:
        """The identity with its late keys, in the order this benchmark has always written it."""
        return early | late

    def opened(self, out: Path, identity: dict) -> None:
        """The folder is claimed for ``identity`` (a benchmark that records its settings at once does it here)."""

    def run_monitor(self, s: EvalSettings, data: Any, name: str, options: dict, prepared: Any,
                    out: Path) -> MonitorResult:
        raise NotImplementedError

    def steps_text(self, rows: list[dict]) -> str:
        """``steps.jsonl`` as this benchmark has always written it (default: the layer's,
        :func:`~ego_adr.monitoring.per_step.steps_text`)."""
        from ego_adr.monitoring.per_step import steps_text

        return steps_text(rows)

    def metrics_text(self, metrics: dict) -> str:
        """``metrics.json`` as this benchmark has always written it."""
        return json.dumps(metrics, indent=1, ensure_ascii=False, default=str)

    def said(self, s: EvalSettings, result: MonitorResult, out: Path) -> None:
        """What the command prints for one monitor."""

    def groups(self, names: list[str]) -> list[list[str]]:
        """The monitors that must share a process (they reuse each other's fits), costly groups first; one task
        each under ``--jobs``. Default: each monitor alone, in order."""
        return [[n] for n in names]

    def beside(self, s: EvalSettings, data: Any, names: list[str], options: dict) -> list[tuple]:
        """Worker tasks of the benchmark's own to run beside the monitors' (e.g. a selection's fits); their
        results reach :meth:`finish` as ``beside``."""
        return []

    def finish(self, s: EvalSettings, data: Any, results: list[MonitorResult], out: Path, not_run: list[str],
               prepared: Any, beside: list | None = None) -> None:
        """The summary of several monitors (``all``, or a benchmark that runs several into one folder)."""

    def evaluate(self, s: EvalSettings) -> int | None:
        """None: the harness runs this benchmark (every benchmark of the house since stage 2 of issue 43). A
        benchmark not on the harness runs itself here and returns its exit code."""
        return None
