"""A registry of monitors per benchmark: one spec per monitor, from which CLI choices, ``--help`` and the
privileged block of every summary derive (add a monitor = one module + one spec).

``reads`` says what a monitor is given; each benchmark names the reads that are its task input
(``public_reads``). A monitor that reads more (a goal, a plan, labels) is ``privileged``: reported apart from
the ones that do not, with what it reads.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass

from ego_adr.monitoring.protocol import Monitor
from ego_adr.registry import Registry as SharedRegistry


@dataclass(frozen=True)
class MonitorSpec:
    name: str
    factory: str  # "module:Class", imported only when built (torch stays off the import path)
    description: str
    reads: tuple[str, ...]
    kwargs: tuple[tuple[str, object], ...] = ()
    trains: bool = False  # fitted on the benchmark's training data
    needs_model: bool = False  # --model NAME through ego_adr.models.load_model
    seeds: bool = False  # averaged over several seeds (a random monitor)


class Registry(SharedRegistry[MonitorSpec]):
    """The monitors of one benchmark and the reads that count as its task input: the shared registry type
    (:class:`ego_adr.registry.Registry`: order, lookup, the "unknown monitor" line) plus what only monitors
    have (privileged reads, building one)."""

    def __init__(self, benchmark: str, public_reads: Iterable[str], specs: Iterable[MonitorSpec]):
        self.benchmark = benchmark
        self.public_reads = frozenset(public_reads)
        super().__init__("monitor", specs, describe=self._describe_monitor)

    def unknown(self, name: str) -> str:
        return f"unknown monitor {name!r} for {self.benchmark}: choose one of {', '.join(self.names())}"

    def privileged(self, spec: MonitorSpec) -> bool:
        return not set(spec.reads) <= self.public_reads

    def extra_reads(self, spec: MonitorSpec) -> tuple[str, ...]:
        return tuple(r for r in spec.reads if r not in self.public_reads)

    def _describe_monitor(self, s: MonitorSpec) -> str:
        tag = f" [privileged: reads {', '.join(self.extra_reads(s))}]" if self.privileged(s) else ""
        return s.description + tag

    def help(self) -> str:  # type: ignore[override]
        """One line per monitor for ``--help``, privileged ones tagged with what they read beyond the input."""
        return self.table()

    def build(self, name: str, **kw) -> Monitor:
        """``kw`` goes to the constructor where it takes it (seed, cache_dir, model, ...)."""
        spec = self.get(name)
        mod, cls = spec.factory.split(":")
        factory = getattr(importlib.import_module(mod), cls)
        params = inspect.signature(factory).parameters
        args = {k: v for k, v in kw.items() if k in params}
        args.update(dict(spec.kwargs))
        mon = factory(**args)
        mon.name = name
        mon.reads = spec.reads
        return mon
