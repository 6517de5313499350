"""table6: thin entry point; see ego_adr/run/experiments.py."""

import sys
from pathlib import Path

from ego_adr.run.experiments import main

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "experiments" / "table6.yaml"

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python scripts/table6.py", experiment=str(CONFIG)))
