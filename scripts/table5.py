"""table5: thin entry point; see ego_adr/run/experiments.py.

    python scripts/table5.py --model qwen2.5-vl --data-root D --video-root V   # one model for every row
    python scripts/table5.py --tiny                                            # offline: each row on its own tiny arch
"""

import sys
from pathlib import Path

from ego_adr.run.experiments import main

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "experiments" / "table5.yaml"

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python scripts/table5.py", experiment=str(CONFIG)))
