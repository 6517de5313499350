"""table5: thin entry point; see ego_adr/experiments.py."""

import sys
from pathlib import Path

from ego_adr.run.experiments import main

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "experiments" / "table5.yaml"

if __name__ == "__main__":
    sys.exit(main([str(CONFIG), *sys.argv[1:]]))
