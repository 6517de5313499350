"""The source registry: every dataset ego_adr can load, one :class:`SourceSpec` each, in report order.

Everything that lists sources derives from :data:`SOURCES` — ``--sources`` choices and help, the default set of
a run (the ``public`` ones), the loader's file names and video layouts, report column labels, the green agent's
dataset names. To add a dataset, write one module that defines a ``SPEC`` (see :mod:`.spec` and the four below)
and add it to :data:`_BUILTIN`; a dataset kept outside this package calls :func:`register` from its own module,
which ``EGO_ADR_PLUGINS=module[,module...]`` imports before any lookup (so the command-line tools see it too).
"""

from __future__ import annotations

import importlib
import os

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

_BUILTIN: tuple[SourceSpec, ...] = (captaincook4d.SPEC, epic_tent.SPEC, assembly101.SPEC, egooops.SPEC, demo.SPEC)

SOURCES: dict[str, SourceSpec] = {}
_plugins_loaded = False


def normalise(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def register(spec: SourceSpec, replace: bool = False) -> SourceSpec:
    """Add a source. Its name and aliases must be new unless ``replace``; returns the spec."""
    taken = {normalise(a): n for n, s in SOURCES.items() for a in (n, *s.aliases)}
    for key in (spec.name, *spec.aliases):
        owner = taken.get(normalise(key))
        if owner is not None and not (replace and owner == spec.name):
            raise ValueError(f"source name {key!r} is already used by source {owner!r}")
    SOURCES[spec.name] = spec
    return spec


for _spec in _BUILTIN:
    register(_spec)


def load_plugins() -> None:
    """Import the modules named in ``$EGO_ADR_PLUGINS`` (comma-separated) once; each registers its sources."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for name in filter(None, (m.strip() for m in os.environ.get("EGO_ADR_PLUGINS", "").split(","))):
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ValueError(f"EGO_ADR_PLUGINS names {name!r}, which cannot be imported ({e})") from e


def get(name: str) -> SourceSpec:
    """The spec of ``name`` or one of its aliases (case and ``-``/``_`` insensitive)."""
    load_plugins()
    key = normalise(name)
    for n, spec in SOURCES.items():
        if key == normalise(n) or key in (normalise(a) for a in spec.aliases):
            return spec
    raise KeyError(f"unknown source {name!r}; known: {', '.join(names())}")


def names(public_only: bool = False) -> tuple[str, ...]:
    """Registered source names in report order (``public_only``: the released benchmark's, a run's default)."""
    load_plugins()
    return tuple(n for n, s in SOURCES.items() if s.public or not public_only)


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
