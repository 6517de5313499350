"""The run-level error: a user mistake found before any work (a leaf, so that configuration and the up-front
checks can both raise it without importing each other)."""


class ConfigError(ValueError):
    """A wrong flag or value: the run stops before doing any work, with one line that says what to do."""
