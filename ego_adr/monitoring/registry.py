"""A registry of monitors per benchmark: one spec per monitor, from which CLI choices, ``--help`` and the
privileged block of every summary derive (add a monitor = one module + one spec).

``reads`` says what a monitor is given; each benchmark names the reads that are its task input
(``public_reads``). A monitor that reads more (a goal, a plan, labels) is ``privileged``: reported apart from
the ones that do not, with what it reads.

A monitor's options (``--monitor-option KEY=VALUE`` of a benchmark's command) are what it declares it takes: the
spec's ``options`` and the factory's class attribute ``OPTIONS`` (each a :class:`MonitorOption`). The generic
command parses and checks them here, so it never needs to know one monitor's flags; the resolved values (defaults
filled in) go to the constructor and into the output folder's identity.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ego_adr.monitoring.monitor import Monitor
from ego_adr.registry import Registry as SharedRegistry


@dataclass(frozen=True)
class MonitorOption:
    """One option a monitor takes: its ``name`` (the constructor's keyword), how a command-line value is read
    (``parse``: str -> value, raising ValueError), its ``default``, the ``choices`` (empty: any value ``parse``
    reads) and a ``help`` line."""

    name: str
    parse: Callable[[str], object] = str
    default: object = None
    help: str = ""
    choices: tuple = ()

    def read(self, text: str):
        try:
            value = self.parse(text)
        except (TypeError, ValueError) as e:
            raise ValueError(f"option {self.name}={text!r} cannot be read: {e}") from None
        if self.choices and value not in self.choices:
            raise ValueError(f"option {self.name}={text!r} is not one of {', '.join(map(str, self.choices))}")
        return value


def int_list(text: str) -> tuple[int, ...]:
    """``"32,64"`` -> ``(32, 64)`` (an option that takes several integers)."""
    out = tuple(int(x) for x in str(text).split(",") if x.strip())
    if not out:
        raise ValueError("no integer given")
    return out


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
    options: tuple[MonitorOption, ...] = ()  # what --monitor-option may set (beside the factory's OPTIONS)
    fits_with: str = ""  # monitors of one name here reuse each other's fits (an in-process memo): one process


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

    def factory(self, name: str):
        mod, cls = self.get(name).factory.split(":")
        return getattr(importlib.import_module(mod), cls)

    def options(self, name: str) -> dict[str, MonitorOption]:
        """The options monitor ``name`` takes: its spec's, then its factory's ``OPTIONS`` class attribute."""
        spec = self.get(name)
        found = {o.name: o for o in (*spec.options, *getattr(self.factory(name), "OPTIONS", ()))}
        return {k: found[k] for k in sorted(found)}

    def resolve_options(self, name: str, given: dict[str, str]) -> dict:
        """Every option of ``name`` with its value: ``given`` (``KEY -> text``, read by the option) over the
        defaults. Raises ValueError naming an option the monitor does not take or a value it cannot read."""
        known = self.options(name)
        unknown = [k for k in given if k not in known]
        if unknown:
            takes = ", ".join(known) or "no options"
            raise ValueError(f"monitor {name} does not take option {unknown[0]!r} (it takes {takes})")
        return {k: (o.read(given[k]) if k in given else o.default) for k, o in known.items()}

    def build(self, name: str, **kw) -> Monitor:
        """``kw`` goes to the constructor where it takes it (seed, cache_dir, model, ...)."""
        spec = self.get(name)
        factory = self.factory(name)
        params = inspect.signature(factory).parameters
        args = {k: v for k, v in kw.items() if k in params}
        args.update(dict(spec.kwargs))
        mon = factory(**args)
        mon.name = name
        mon.reads = spec.reads
        return mon
