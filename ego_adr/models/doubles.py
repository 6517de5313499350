"""Model doubles for benchmarks and tests that are about the code *around* a model (caching, overlap, batching).

They implement the :class:`~ego_adr.models.base.VLM` protocol, answer each stage with plausible fixed text,
record every request they are really asked, and can take a fixed time per request (``time.sleep`` releases the
GIL the way a GPU kernel or a remote server does) so that overlap of decoding and model calls can be measured.
They are never used for a reported model result.
"""

from __future__ import annotations

import threading
import time

from ego_adr.models.base import Capabilities, Generation, Request

STAGE_ANSWERS = {
    "bank": "1. Fill the kettle [objects: kettle]\n2. Pour the water into the cup [objects: cup]",
    "match": "2",
    "narrate": "The person pours water from the kettle into the cup.",
    "open_end": "Yes, I poured the water into the cup.",
}


class ScriptedModelDouble:
    """Fixed answer per stage; ``latency`` seconds per request (per batch when ``per_batch``)."""

    model_id = "scripted-double"

    def __init__(self, latency: float = 0.0, per_batch: bool = False, batch_size: int = 4,
                 answer: str = "Answer: Wrong order", fingerprint: str = "scripted-double-v1") -> None:
        self.latency = latency
        self.per_batch = per_batch
        self.answer = answer
        self.fingerprint = fingerprint
        self.capabilities = Capabilities(video=True, text_only=True, max_batch_size=batch_size)
        self.asked: list[tuple] = []
        self._lock = threading.Lock()

    def generate(self, requests: list[Request]) -> list[Generation]:
        from ego_adr.models.cache import messages_digest

        out = []
        if self.per_batch and self.latency:
            time.sleep(self.latency)
        for r in requests:
            t0 = time.perf_counter()
            if not self.per_batch and self.latency:
                time.sleep(self.latency)
            stage = r.meta.get("stage")
            with self._lock:
                self.asked.append((stage, r.meta.get("prompt"), messages_digest(r)))
            out.append(Generation(STAGE_ANSWERS.get(stage, self.answer), seconds=time.perf_counter() - t0))
        return out

    def loglikelihood(self, requests: list) -> list:
        """Fixed candidate likelihoods (:mod:`ego_adr.models.likelihood`) for the code around a scoring model: each
        candidate's log-likelihood is a stable function of its text (a shorter one more likely, a digest of the text
        between), the same in every process; recorded in ``asked`` under stage ``loglikelihood``."""
        import hashlib

        from ego_adr.models.likelihood import Likelihoods

        out = []
        for r in requests:
            with self._lock:
                self.asked.append(("loglikelihood", (r.meta or {}).get("prompt"), len(r.candidates)))
            lps = [-1.0 - len(c) - int(hashlib.sha256(c.encode()).hexdigest()[:4], 16) / 65536 for c in r.candidates]
            out.append(Likelihoods(lps, [max(1, len(c) // 4) for c in r.candidates]))
        return out
