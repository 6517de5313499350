"""``python -m ego_adr.build [review|merge] ...``: the same commands as ``python -m ego_adr.data build ...``, entered
from this layer (docs/build.md)."""

import sys

from ego_adr.build.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
