"""The routing probe's verdict for each real small LM (docs/real_models.md, block ``probe-real``): which route the
text-only probe (paper Section 5.1, Appendix G) gives SmolLM2-135M-Instruct and Gemma 3 270M behind llama.cpp's
server, and why, from the probe's own record (its trials: the step and value asked for, what the model wrote).

    python scripts/bench_real_probe.py [--models smollm2-135m gemma3-270m] [--write-docs]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import docs_tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["probe-real"])
    from ego_adr.models.llamacpp import LlamaCppServer
    from ego_adr.models.openai_api import OpenAIChatModel
    from ego_adr.models.packaged import locate
    from ego_adr.reasoning.probe import cached_probe

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for alias in a.models:
            with LlamaCppServer(locate(alias), alias) as srv:
                model = OpenAIChatModel(alias, base_url=srv.base_url, concurrency=1)
                results.append((alias, cached_probe(model, Path(tmp))))
                model.close()
    with docs_tables.Printed() as table:
        print("| model | route | why (the probe's reason) | trials: step and value asked -> what the model wrote |")
        print("|---|---|---|---|")
        for alias, res in results:
            trials = "; ".join(f"{t['step']}, {t['value']} -> {_short(t['answer'])}" for t in res.trials) or \
                f"stage 1 answer: {_short(res.stage1.get('answer'))}"
            print(f"| {alias} | {res.route} | {res.reason} | {trials} |")
    docs_tables.publish(a, {"probe-real": table.text})


def _short(text: str | None, n: int = 60) -> str:
    t = " ".join((text or "").split()).replace("|", "/")
    return f"`{t[:n]}{'...' if len(t) > n else ''}`" if t else "(empty)"


if __name__ == "__main__":
    main()
