"""``python -m ego_adr.monitoring``: the command line is :mod:`ego_adr.monitoring.cli` (``main`` is importable here
too, as it was before issue 43 moved it)."""

import sys

from ego_adr.monitoring.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
