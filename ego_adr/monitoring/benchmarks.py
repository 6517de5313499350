"""The online benchmarks: one :class:`BenchmarkSpec` per benchmark and one registry of them (:data:`BENCHMARKS`),
from which ``python -m ego_adr.monitoring evaluate --benchmark B`` and ``list`` derive.

A spec says what a reader needs before running anything: what an episode and an observation are, its splits and
the role of each (the monitors are *fitted* on one, thresholds and the headline are *chosen* on one, the reported
numbers are *scored* on one), the context a monitor may read (its monitor registry's public reads; a monitor that
reads more is privileged and reported apart), its monitors (a :class:`ego_adr.monitoring.registry.Registry`), its
metrics and its report. ``driver`` names the class that runs it on the harness (:mod:`ego_adr.monitoring.harness`).

**Why the registry finds its benchmarks instead of listing them.** The benchmarks live in rooms above this layer
(``helpmeout/``, ``stream/``, the step streams), and a layer never imports upward. So, as lmms-eval's task index
finds the task folders under its tasks directory, the registry looks on disk, the first time it is asked, for a
module named ``benchmarks.py`` in each package of ``ego_adr`` (:func:`ego_adr.registry.discover`) and takes that
module's ``BENCHMARKS`` tuple: a new
benchmark is its room's folder plus one line in its room's ``benchmarks.py``, and nothing here names a room.
A benchmark kept outside the package registers itself from a module named in ``$EGO_ADR_PLUGINS``
(:func:`register`), as sources and backends do.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from ego_adr.registry import Registry, discover

#: What a split is for: the monitors train on ``fit``, thresholds and the headline monitor are chosen on
#: ``choose``, the reported numbers come from ``score``.
ROLES = ("fit", "choose", "score")

#: The module a room declares its benchmarks in (``BENCHMARKS``: a tuple of :class:`BenchmarkSpec`).
ROOM_MODULE = "benchmarks"


@dataclass(frozen=True)
class Split:
    name: str
    role: str  # one of ROLES
    source: str  # where its episodes come from (a file, a flag, a rule)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"split {self.name}: role {self.role!r} is not one of {', '.join(ROLES)}")


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    description: str
    episodes: str  # what one episode is
    observation: str  # what a monitor is given at each step
    splits: tuple[Split, ...]
    monitors: str  # "module:NAME" of its monitor Registry, imported when asked (torch stays off `list`'s path)
    metrics: str  # what it scores, and where the functions live
    report: str  # what its report holds
    driver: str  # "module:Class": its Benchmark on the harness
    page: str  # the docs page that is its home
    aliases: tuple[str, ...] = ()
    download: str = ""  # "module:function(out, base_url, timeout, quiet) -> exit code" fetching its files, if any

    def monitor_registry(self):
        """Its monitors (a :class:`ego_adr.monitoring.registry.Registry`)."""
        return _attribute(self.monitors)

    def make_driver(self):
        """Its :class:`ego_adr.monitoring.driver.Benchmark`, ready to run."""
        return _attribute(self.driver)(self)

    def roles(self) -> dict[str, tuple[str, ...]]:
        """role -> the splits that play it."""
        return {r: tuple(s.name for s in self.splits if s.role == r) for r in ROLES}


def _attribute(target: str):
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


class BenchmarkRegistry(Registry[BenchmarkSpec]):
    """The shared registry type, filled from the rooms' ``benchmarks.py`` before its first lookup (then the
    plugins): see the module docstring for why it finds them."""

    def __init__(self) -> None:
        super().__init__("benchmark", plugins=True)
        self._found = False

    def unknown(self, name: str) -> str:
        return f"--benchmark {name!r} is not a benchmark: choose one of {', '.join(self.names())}"

    def _ready(self) -> None:
        if not self._found:
            self._found = True  # before importing: a room's own lookups must not start another search
            for room in discover(ROOM_MODULE, skip=Path(__file__).resolve().parent.name):
                for spec in room.BENCHMARKS:
                    self.register(spec)
        super()._ready()


BENCHMARKS = BenchmarkRegistry()


def register(spec: BenchmarkSpec, replace: bool = False) -> BenchmarkSpec:
    """Add a benchmark kept outside the package (call it from a module named in ``$EGO_ADR_PLUGINS``)."""
    BENCHMARKS._ready()
    return BENCHMARKS.register(spec, replace)


def downloads() -> list:
    """The distinct download functions of the benchmarks (``monitoring download``), in registry order."""
    targets = dict.fromkeys(spec.download for spec in BENCHMARKS if spec.download)
    return [_attribute(t) for t in targets]


def listing() -> str:
    """``python -m ego_adr.monitoring list``: every benchmark, its splits, what a monitor may read, and its
    monitors with what each reads (privileged ones marked); benchmarks that share a monitor registry list it once."""
    blocks, shown = [], {}
    for spec in BENCHMARKS:
        reg = spec.monitor_registry()
        lines = [f"{spec.name}: {spec.description}" + (f" (also: {', '.join(spec.aliases)})" if spec.aliases else ""),
                 f"  episodes: {spec.episodes}", f"  observation: {spec.observation}",
                 "  splits: " + "; ".join(f"{s.name} ({s.role}: {s.source})" for s in spec.splits),
                 f"  a monitor may read: {', '.join(sorted(reg.public_reads)) or 'the observations only'}",
                 f"  metrics: {spec.metrics}", f"  docs: {spec.page}"]
        if spec.monitors in shown:
            lines.append(f"  monitors: those of {shown[spec.monitors]}")
        else:
            shown[spec.monitors] = spec.name
            lines.append("  monitors (* privileged: reads more than the above, reported apart):")
            w = max(len(n) for n in reg.names())
            for m in reg:
                star = "*" if reg.privileged(m) else " "
                lines.append(f"   {star}{m.name:<{w}}  reads {', '.join(m.reads) or 'the observations only'}"
                             + ("; trains" if m.trains else "") + ("; calls a model" if m.needs_model else ""))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
