"""The one registry type: an ordered set of named specs, from which every extension point's CLI choices, help
text and lookup derive (a shared leaf: it imports only :mod:`ego_adr.errors`).

Why one type: sources, model families, backends, modes, protocols and the monitors of each online benchmark are
all "a name -> a small spec, in a meaningful order", and each used to spell its own lookup, its own "unknown
name" message and its own help text (issue 37 item 4). A :class:`Registry` holds the specs in the order they are
registered (report order, Table order), resolves aliases (when ``normalise`` is given, case and spelling
variants too), refuses a name or alias used twice, and answers an unknown name with one line that lists the
choices (:class:`UnknownName`, a :class:`~ego_adr.errors.UserError`: exit 2). Each registry stays in the layer
it belongs to; only the type is shared.

Plugins: a registry made with ``plugins=True`` imports the modules named in ``$EGO_ADR_PLUGINS`` (comma
separated) before its first lookup, so a source or backend kept outside the package (its module calls the
registry's ``register``) is seen by every command line. :func:`load_plugins` does that once per process for all
registries.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from ego_adr.errors import UserError

S = TypeVar("S")

PLUGINS_ENV = "EGO_ADR_PLUGINS"
_plugins_loaded = False


class UnknownName(UserError, KeyError):
    """A name no spec of the registry has. A :class:`UserError` (one line, exit 2) and a ``KeyError``, so callers
    that look a name up like a dict key keep working."""

    __str__ = BaseException.__str__  # the message as written, not KeyError's quoted repr


class PluginError(UserError):
    """``$EGO_ADR_PLUGINS`` names a module that cannot be imported."""


def load_plugins() -> None:
    """Import the modules named in ``$EGO_ADR_PLUGINS`` (comma-separated), once; each registers its specs."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True  # before importing: a plugin's own lookups must not import it again
    for name in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise PluginError(f"{PLUGINS_ENV} names {name!r}, which cannot be imported ({e})") from e


def discover(module: str, skip: str = "") -> list:
    """The modules named ``module`` in the packages of ``ego_adr`` (``ego_adr/<package>/<module>.py``, found on
    disk, packages in name order; ``skip``: a package to leave out, the caller's own), imported.

    Why: a layer must not import the rooms above it, yet some of its registries are filled by them (the online
    benchmarks of ``monitoring/``, the ``build`` subcommand that ``python -m ego_adr.data`` offers on behalf of
    ``benchmark_builder/``). The lower layer names a module, never a package; each room that has such a module
    declares itself there, as lmms-eval's task index finds the task folders under its tasks directory.
    ``tests/test_layout.py`` checks that every room found this way sits above the layer that looks for it."""
    from pathlib import Path

    root = Path(__file__).resolve().parent
    found = sorted(p.parent.name for p in root.glob(f"*/{module}.py") if p.parent.name != skip)
    return [importlib.import_module(f"{root.name}.{pkg}.{module}") for pkg in found]


def _exact(name: str) -> str:
    return name


class Registry(Generic[S]):
    """Named specs of one ``kind`` ("backend", "source", ...), in registration order.

    ``specs`` is the live ``name -> spec`` dict (modules expose it under their historical names, e.g.
    ``BACKENDS``); iterating the registry yields the specs. A spec's name is ``spec.name`` and its aliases
    ``spec.aliases`` when it has them; specs without a name (e.g. protocol presets) are given as a mapping.
    ``normalise`` maps a name before comparing (default: exact); ``describe`` gives a spec's help line (default:
    its ``description``).
    """

    def __init__(self, kind: str, specs: Iterable[S] | Mapping[str, S] = (), *, plugins: bool = False,
                 normalise: Callable[[str], str] = _exact,
                 describe: Callable[[S], str] | None = None) -> None:
        self.kind = kind
        self.plugins = plugins
        self.normalise = normalise
        self._describe = describe or (lambda s: str(getattr(s, "description", "")))
        self.specs: dict[str, S] = {}
        self._keys: dict[str, str] = {}  # normalised name or alias -> name
        items = specs.items() if isinstance(specs, Mapping) else ((None, s) for s in specs)
        for name, spec in items:
            self.register(spec, name=name)

    # -- registration -------------------------------------------------------------------------------------------
    def register(self, spec: S, replace: bool = False, *, name: str | None = None) -> S:
        """Add ``spec`` (under ``name``, else ``spec.name``); its name and aliases must be new unless ``replace``
        (then it takes the place of the spec of the same name). Returns the spec."""
        name = name or spec.name  # type: ignore[attr-defined]
        keys = [name, *getattr(spec, "aliases", ())]
        for key in keys:
            owner = self._keys.get(self.normalise(key))
            if owner is not None and not (replace and owner == name):
                raise ValueError(f"{self.kind} name {key!r} is already used by {self.kind} {owner!r}")
        if name in self.specs:
            self._keys = {k: n for k, n in self._keys.items() if n != name}
        self.specs[name] = spec
        self._keys.update({self.normalise(k): name for k in keys})
        return spec

    # -- lookup -------------------------------------------------------------------------------------------------
    def _ready(self) -> None:
        if self.plugins:
            load_plugins()

    def names(self) -> list[str]:
        """The registered names in order (plugins included)."""
        self._ready()
        return list(self.specs)

    def find(self, name: str | None) -> S | None:
        """The spec of ``name`` or one of its aliases, or None."""
        self._ready()
        key = self._keys.get(self.normalise(str(name))) if name is not None else None
        return self.specs[key] if key is not None else None

    def get(self, name: str) -> S:
        """The spec of ``name`` or one of its aliases; an unknown name is one line listing the choices."""
        spec = self.find(name)
        if spec is None:
            raise UnknownName(self.unknown(name))
        return spec

    def unknown(self, name: str) -> str:
        """The message for an unknown ``name``: what was asked and every choice."""
        return f"unknown {self.kind} {name!r}: choose one of {', '.join(self.names())}"

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def __getitem__(self, name: str) -> S:
        return self.get(name)

    def __iter__(self) -> Iterator[S]:
        self._ready()
        return iter(list(self.specs.values()))

    def __len__(self) -> int:
        self._ready()
        return len(self.specs)

    # -- help ---------------------------------------------------------------------------------------------------
    def help_of(self, spec: S) -> str:
        """The help line of one spec (its description, unless the registry describes its specs otherwise)."""
        return self._describe(spec)

    def help(self, sep: str = "; ") -> str:
        """``name: description`` for each spec, joined by ``sep`` (a ``--flag`` help text)."""
        return sep.join(f"{n}: {self._describe(s)}" for n, s in zip(self.names(), self, strict=True))

    def table(self, indent: str = "  ") -> str:
        """One aligned line per spec, for a ``--help`` description block."""
        names = self.names()
        w = max((len(n) for n in names), default=0)
        return "\n".join(f"{indent}{n:<{w}}  {self._describe(self.specs[n])}".rstrip() for n in names)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self.specs)})"
