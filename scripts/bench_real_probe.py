"""The routing probe's verdict for each real small LM (docs/real_models.md, block ``probe-real``): which route the
text-only probe (paper Section 5.1, Appendix G) gives SmolLM2-135M-Instruct and Gemma 3 270M through ``--backend
llamacpp``, and why, from the probe's own record: with the paper's reading of what the model writes
(``generate``) and with ``--scoring likelihood`` (each trial's right answer scored beside wrong ones as the start
of the reply; a named deviation), trial by trial.

    python scripts/bench_real_probe.py [--models smollm2-135m gemma3-270m] [--scorings generate likelihood] [--write-docs]
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import docs_tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--scorings", nargs="+", default=["generate", "likelihood"], choices=["generate", "likelihood"])
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["probe-real"])
    from ego_adr.models.cache import CachedModel
    from ego_adr.models.llamacpp_backend import LlamaCppModel
    from ego_adr.reasoning.probe import cached_probe

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for alias in a.models:
            model = LlamaCppModel(alias)
            for scoring in a.scorings:
                results.append((alias, scoring, cached_probe(CachedModel(model, None), Path(tmp), scoring=scoring)))
            model.close()
    with docs_tables.Printed() as table:
        print("| model | scoring | route | why (the probe's reason) | trials: step and value asked -> what the model "
              "wrote, or the answer it found most likely (and its probability among the options) |")
        print("|---|---|---|---|---|")
        for alias, scoring, res in results:
            trials = "; ".join(f"{t['step']}, {t['value']} -> {_trial(t)}" for t in res.trials) or \
                f"stage 1 answer: {_short(res.stage1.get('answer'))}"
            print(f"| {alias} | {scoring} | {res.route} | {res.reason} | {trials} |")
    docs_tables.publish(a, {"probe-real": table.text})


def _trial(t: dict) -> str:
    if "options" not in t:
        return _short(t["answer"])
    lps = list(t["options"].values())
    top = max(lps)
    z = top + math.log(sum(math.exp(x - top) for x in lps))
    return f"`{t['answer']}` ({math.exp(t['options'][t['answer']] - z):.2f})"


def _short(text: str | None, n: int = 60) -> str:
    t = " ".join((text or "").split()).replace("|", "/")
    return f"`{t[:n]}{'...' if len(t) > n else ''}`" if t else "(empty)"


if __name__ == "__main__":
    main()
