"""table3: thin entry point (paper Table 3, open-ended VQA); see ego_adr/run/experiments.py.

    python scripts/table3.py --model qwen2.5-vl --data-root D --video-root V   # one command per model
    python scripts/table3.py --tiny                                            # offline: tiny model and judges
"""

import sys
from pathlib import Path

from ego_adr.run.experiments import main

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "experiments" / "table3.yaml"

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python scripts/table3.py", experiment=str(CONFIG)))
