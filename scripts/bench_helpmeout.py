"""Benchmark: time to generate a HelpMeOut release (issue target: 20,000 episodes in < 10 min on 2 cores).

    python scripts/bench_helpmeout.py --episodes 20000 --workers 2

Prints one table row per run: episodes, workers, seconds, episodes/s, and the largest category-share gap.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ego_adr.helpmeout.episodes import assign_splits, generate, write_release


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=20000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    t0 = time.perf_counter()
    eps = generate(a.episodes, a.seed, workers=a.workers, progress=False)
    assign_splits(eps, a.seed)
    with tempfile.TemporaryDirectory() as d:
        stats = write_release(eps, Path(d))
    dt = time.perf_counter() - t0
    print("| episodes | workers | seconds | episodes/s | max share gap (pp) | under 10 min |")
    print("|---:|---:|---:|---:|---:|---|")
    print(f"| {a.episodes} | {a.workers} | {dt:.1f} | {a.episodes / dt:.0f} | {stats['max_share_gap_pp']:.2f} | "
          f"{'yes' if dt < 600 else 'NO'} |")


if __name__ == "__main__":
    main()
