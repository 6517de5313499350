"""The subcommands this package offers ``python -m ego_adr.data`` (which finds this module on disk and never imports
the package by name: ``data/`` sits below ``models/``, this package above it). ``build`` and its ``review`` and
``merge`` steps are :mod:`ego_adr.benchmark_builder.cli`'s, imported only when one is run."""

from __future__ import annotations


def _build(argv: list[str]) -> int:
    from ego_adr.benchmark_builder.cli import main

    return main(argv)


COMMANDS = {"build": _build}
