"""The settings of one ``monitoring evaluate`` run, typed, built once from the command line.

Why a dataclass and not the argparse ``Namespace``: below the command line a function should say what it reads.
A Namespace carries every flag of every benchmark, a typo in an attribute name is a silent ``None``
(``getattr(a, "quiet", False)``), and it cannot cross to a worker process without its callables stripped. Here the
flags every benchmark shares are :class:`EvalSettings`' fields and a benchmark's own flags are its driver's
``Settings`` dataclass (``own``), each field named as its flag's ``dest``; :func:`from_namespace` builds both once
and nothing below the command line sees the Namespace.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ego_adr.folders import add_out_argument
from ego_adr.models.arguments import add_model_arguments


@dataclass(frozen=True)
class ModelChoice:
    """``--model/--backend/--base-url/--device``, as every command that takes a model spells them."""

    model: str | None = None
    backend: str = "hf"
    base_url: str | None = None
    device: str | None = None


@dataclass(frozen=True)
class EvalSettings:
    benchmark: str
    monitor: str  # as typed: NAME, NAME,NAME or all
    monitor_options: tuple[str, ...] = ()  # --monitor-option KEY=VALUE, as typed
    out: Path | None = None
    model: ModelChoice = field(default_factory=ModelChoice)
    cache_dir: str | None = None
    jobs: int | None = None
    quiet: bool = False
    fresh: bool = False  # discard the folder's results first (only a benchmark that says what it writes takes it)
    own: Any = None  # the benchmark's own settings (its driver's Settings dataclass)

    @property
    def every(self) -> bool:
        """``--monitor all``: every monitor that can run (one that cannot is listed as not run)."""
        return self.monitor == "all"


@dataclass(frozen=True)
class NoSettings:
    """A benchmark without flags of its own."""


def add_common_arguments(p: argparse.ArgumentParser, monitor_help: str) -> None:
    """The flags of every benchmark (its own come from its driver's ``add_arguments``)."""
    from ego_adr.monitoring.benchmarks import BENCHMARKS

    p.add_argument("--benchmark", required=True, metavar="B",
                   help=f"which benchmark: {', '.join(BENCHMARKS.names())} (`list` describes each)")
    p.add_argument("--monitor", required=True, metavar="M", help=monitor_help)
    p.add_argument("--monitor-option", action="append", default=[], metavar="KEY=VALUE", dest="monitor_option",
                   help="an option of the monitor (repeatable): checked against what it takes, part of the output "
                   "folder's identity; with --monitor all it goes to every monitor that takes it")
    add_out_argument(p, "output folder", fresh="each monitor's per-step rows, metrics, report and other result "
                     "files, the summary of several, identity.json")
    add_model_arguments(p, purpose="monitors that need a model: ", device_default=None)
    p.add_argument("--cache-dir", default=None, help="folder of the stage cache (default: the benchmark's)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="--monitor all: processes for the monitors that need no model (default: $EGO_ADR_JOBS, else "
                   "the CPUs available); every N writes the same bytes")
    p.add_argument("--quiet", action="store_true")


def own_settings(ns: argparse.Namespace, kind: type) -> Any:
    """The benchmark's own settings: each field of ``kind`` from the flag of the same ``dest``."""
    return kind(**{f.name: getattr(ns, f.name) for f in fields(kind)})


def from_namespace(ns: argparse.Namespace, kind: type) -> EvalSettings:
    """The run's settings, once, from the parsed command line."""
    return EvalSettings(
        benchmark=ns.benchmark, monitor=ns.monitor, monitor_options=tuple(ns.monitor_option or ()),
        out=Path(ns.out) if ns.out else None,
        model=ModelChoice(ns.model, ns.backend, ns.base_url, ns.device), cache_dir=ns.cache_dir, jobs=ns.jobs,
        quiet=bool(ns.quiet), fresh=bool(getattr(ns, "fresh", False)), own=own_settings(ns, kind))
