"""Run-level user mistakes. The error base and the one-line parser live in :mod:`ego_adr.errors` (a shared leaf);
``ConfigError`` is the run configuration's kind of :class:`ego_adr.errors.UserError`."""

from ego_adr.errors import OneLineParser, UserError

__all__ = ["ConfigError", "OneLineParser"]


class ConfigError(UserError):
    """A wrong flag or value: the run stops before doing any work, with one line that says what to do."""
