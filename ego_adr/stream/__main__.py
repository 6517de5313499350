import sys

from ego_adr.stream.cli import main

sys.exit(main())
