import sys

from ego_adr.helpmeout.cli import main

sys.exit(main())
