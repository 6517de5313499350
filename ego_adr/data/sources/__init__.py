"""The source registry: every dataset ego_adr can load, one :class:`SourceSpec` each, in report order.

Everything that lists sources derives from :data:`SOURCES` — ``--sources`` choices and help, the default set of
a run (the ``public`` ones), the loader's file names and video layouts, report column labels, the green agent's
dataset names. To add a dataset, write one module that defines a ``SPEC`` (see :mod:`.spec` and the four below)
and add it to :data:`_BUILTIN`; a dataset kept outside this package calls :func:`register` from its own module,
which ``EGO_ADR_PLUGINS=module[,module...]`` imports before any lookup (so the command-line tools see it too).
The registry is the shared type of :mod:`ego_adr.registry`, which also owns the plugin loader.
"""

from __future__ import annotations

from ego_adr.data.sources import assembly101, built, captaincook4d, demo, egooops, epic_tent
from ego_adr.data.sources.assembly101 import assembly101_action
from ego_adr.data.sources.captaincook4d import clean_cc4d_description
from ego_adr.data.sources.egooops import egooops_step_table
from ego_adr.data.sources.spec import (
    UNINFORMATIVE_ACTIONS,
    Extracted,
    SourceSpec,
    as_int,
    task_id_of,
    text,
    video_id_of,
)
from ego_adr.registry import Registry, load_plugins

_BUILTIN: tuple[SourceSpec, ...] = (captaincook4d.SPEC, epic_tent.SPEC, assembly101.SPEC, egooops.SPEC, demo.SPEC)

def normalise(name: str) -> str:
    return name.strip().lower().replace("-", "_")


#: The sources in report order: names and aliases match case- and ``-``/``_``-insensitively; plugins included.
REGISTRY: Registry[SourceSpec] = Registry("source", _BUILTIN, plugins=True, normalise=normalise,
                                          describe=lambda s: s.label)
SOURCES: dict[str, SourceSpec] = REGISTRY.specs  # name -> spec (the live dict of the registry)


def register(spec: SourceSpec, replace: bool = False) -> SourceSpec:
    """Add a source. Its name and aliases must be new unless ``replace``; returns the spec."""
    return REGISTRY.register(spec, replace)


def get(name: str) -> SourceSpec:
    """The spec of ``name`` or one of its aliases (case and ``-``/``_`` insensitive); an unknown name is a
    :class:`~ego_adr.registry.UnknownName` (a ``UserError`` and a ``KeyError``) listing the known sources."""
    return REGISTRY.get(name)


def names(public_only: bool = False) -> tuple[str, ...]:
    """Registered source names in report order (``public_only``: the released benchmark's, a run's default)."""
    return tuple(n for n in REGISTRY.names() if SOURCES[n].public or not public_only)


def discover(data_root) -> tuple[str, ...] | None:
    """Register the sources a built data root declares in its ``sources.json`` (:mod:`.built`); their names,
    or None when the root declares none."""
    load_plugins()
    return built.discover(data_root)


def default_sources(data_root=None) -> tuple[str, ...]:
    """The sources a data root holds when none are named: those it declares (a built benchmark), else the
    released benchmark's (the public ones)."""
    return discover(data_root) or names(public_only=True)


def order_key(source: str) -> tuple[int, str]:
    """Sort key putting registered sources in registry order and anything else after them, alphabetically."""
    order = names()
    return (order.index(source), "") if source in order else (len(order), source)


__all__ = [
    "SOURCES", "UNINFORMATIVE_ACTIONS", "Extracted", "SourceSpec", "as_int", "assembly101_action",
    "clean_cc4d_description", "default_sources", "discover", "egooops_step_table", "get", "load_plugins", "names", "normalise", "order_key",
    "register", "task_id_of", "text", "video_id_of",
]
