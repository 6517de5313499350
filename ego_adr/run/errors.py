"""Run-level user mistakes: :class:`ConfigError` and the one-line parser, re-exported from the shared leaf
:mod:`ego_adr.errors` (where every layer can raise them)."""

from ego_adr.errors import ConfigError, OneLineParser

__all__ = ["ConfigError", "OneLineParser"]
