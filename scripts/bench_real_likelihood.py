"""Candidate likelihoods of the real small LMs on each backend (docs/real_models.md, block ``likelihood-real``):
how closely llama.cpp (quantised kernels) and the HF backend (the same GGUF dequantised to fp32) agree, and each
model's known-answer check on each backend beside a random-weight GGUF of the same tokenizer.

    python scripts/bench_real_likelihood.py [--write-docs]

Agreement is measured on SmolLM2 over raw prefixes (a fact, two symbol continuations in PREGO's form, a list) and a
chat prefix; per request: the same tokens, the same most
likely candidate, the largest difference of a candidate's log-likelihood (nats) and the total variation between
the candidates' renormalised probabilities. Gemma 3 is not loaded in the HF backend here (about a minute to
dequantise on 2 cores); its raw requests agree as SmolLM2's do (measured once, ``tests`` keep SmolLM2).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import docs_tables

REPO = Path(__file__).resolve().parents[1]


def _agreement(a, b) -> tuple[bool, bool, float, float]:
    from ego_adr.models.likelihood import normalised

    pa, pb = normalised(a.logprobs), normalised(b.logprobs)
    tv = sum(abs(math.exp(x) - math.exp(y)) for x, y in zip(pa, pb)) / 2
    diff = max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs))
    return a.tokens == b.tokens, pa.index(max(pa)) == pb.index(max(pb)), diff, tv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["likelihood-real"])
    from ego_adr.models.base import Message
    from ego_adr.models.hf_text import HFTextLM
    from ego_adr.models.known_answers import KNOWN, KNOWN_P, known_answer, write_random_gguf
    from ego_adr.models.likelihood import LikelihoodRequest, prefix_free
    from ego_adr.models.llamacpp_backend import LlamaCppModel
    from ego_adr.models.packaged import locate

    requests = [
        LikelihoodRequest("The capital of France is", (" Paris", " London", " the", " Madrid is big")),
        LikelihoodRequest("Input Sequence:\n -1, 1, 2, 3, 4, 5, 6, ", tuple(prefix_free([str(i) for i in range(14)], ","))),
        LikelihoodRequest("Input Sequence:\n -1, 0, 4, 10, 3, ", tuple(prefix_free([str(i) for i in range(12)], ","))),
        LikelihoodRequest("Monday, Tuesday, Wednesday,", (" Thursday", " Friday", " Monday", " Sunday")),
        LikelihoodRequest([Message.user("What is the capital of France?")], ("Paris", "The capital", "London")),
    ]

    t0 = time.perf_counter()
    smol = LlamaCppModel("smollm2-135m", threads=1)
    hf = HFTextLM(str(locate("smollm2-135m")), device="cpu")
    pairs = list(zip(requests, smol.loglikelihood(requests), hf.loglikelihood(requests)))
    checks = [("smollm2-135m", "llamacpp", smol), ("smollm2-135m", "hf", hf)]
    gemma = LlamaCppModel("gemma3-270m", threads=1)
    checks.append(("gemma3-270m", "llamacpp", gemma))
    with tempfile.TemporaryDirectory() as tmp:
        fake = write_random_gguf(locate("smollm2-135m"), Path(tmp) / "random-smollm2.gguf")
        rnd = LlamaCppModel(str(fake), threads=1)
        known = [(m, b, *known_answer(model, m)) for m, b, model in checks]
        known.append(("random weights, SmolLM2's tokenizer", "llamacpp", *known_answer(rnd, "smollm2-135m")))
        rnd.close()
    for model in (smol, gemma):
        model.close()
    with docs_tables.Printed() as table:
        print(f"SmolLM2-135M-Instruct's GGUF on llama.cpp and on the HF backend (dequantised to fp32); "
              f"{time.perf_counter() - t0:.0f} s in all (HF load included)\n")
        print("| prefix (form) | candidates | same tokens | same most likely | largest difference (nats) | "
              "total variation of the renormalised probabilities |")
        print("|---|---|---|---|---:|---:|")
        for req, x, y in pairs:
            same_tok, same_top, diff, tv = _agreement(x, y)
            text = req.prefix if req.form == "raw" else req.prefix[0].content[0]
            shown = " ".join(text.split())[-40:].replace("|", "/")
            print(f"| `{shown}` ({req.form}) | {len(req.candidates)} | {same_tok} | {same_top} | {diff:.3f} | "
                  f"{tv:.3f} |")
        print(f"\nKnown answers (raw continuation; passes when the right option is the most likely and at least "
              f"{KNOWN_P:.0%} likely):\n")
        print("| model | backend | prefix | options' probabilities, the right one first | passes |")
        print("|---|---|---|---|---|")
        for m, b, ok, probs in known:
            prefix, options = KNOWN["smollm2-135m" if m.startswith("random") else m]
            cells = ", ".join(f"`{o.strip()}` {p:.4f}" if p >= 1e-3 else f"`{o.strip()}` {p:.1e}"
                              for o, p in zip(options, probs))
            print(f"| {m} | {b} | `{prefix}` | {cells} | {'yes' if ok else 'no'} |")
    docs_tables.publish(a, {"likelihood-real": table.text})


if __name__ == "__main__":
    main()
