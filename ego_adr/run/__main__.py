"""``python -m ego_adr.run``: see :mod:`ego_adr.run.cli`."""

import sys

from ego_adr.run.cli import main

sys.exit(main())
