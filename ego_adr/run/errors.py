"""User mistakes: the run-level error found before any work, and the argument parser every command line uses so
that a wrong flag is one line too (a leaf, so that configuration, the up-front checks and every CLI can use it
without importing each other)."""

import argparse


class ConfigError(ValueError):
    """A wrong flag or value: the run stops before doing any work, with one line that says what to do."""


class OneLineParser(argparse.ArgumentParser):
    """A wrong flag is one line (what is wrong, where the help is) and exit 2, not the whole usage block."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")
