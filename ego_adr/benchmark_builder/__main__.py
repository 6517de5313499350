"""``python -m ego_adr.benchmark_builder [review|merge] ...``: the same commands as ``python -m ego_adr.data build ...``, entered
from this layer (docs/build.md)."""

import sys

from ego_adr.benchmark_builder.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
