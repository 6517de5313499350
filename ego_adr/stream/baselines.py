"""Baselines on the same streaming episodes as the Ego-ADR monitor.

- ``random``: each window gets an error probability drawn uniformly from [0, 1) and a uniformly drawn error
  type; the draw is a function of (seed, episode, time) only, so a resumed run draws the same numbers. Its M1
  AUROC is 0.5 in expectation and its M2 AUPRC the share of erroneous segments (HelpMeOut, Table 2's Random row).
- ``direct``: the one-pass ``direct`` prompt (frames + procedure + the error types, step "None" since no step is
  given online) applied to every window independently. It gets the same end-of-recording check as Ego-ADR
  online (:meth:`~ego_adr.reasoning.online.OnlineMonitor.finish`: a step never reached is an omission), so that
  it can catch an omission at all: its reply is matched to the procedure's steps with the same key-step
  matcher, and a confident match marks the step reached. The matches feed only that check; the window's
  probability is the one-pass answer's alone (no progress evidence), so the row still measures the prompt.
"""

from __future__ import annotations

import hashlib
import random

from ego_adr.reasoning.online import CONFIDENT_METHODS, OnlineMonitor, Tick
from ego_adr.taxonomy import CORRECT, OPTIONS

ERROR_TYPES = tuple(o for o in OPTIONS if o != CORRECT)


class RandomStreamMonitor(OnlineMonitor):
    name = "random"
    tracks_steps = False
    needs_frames = False

    def __init__(self, seed: int = 0, threshold: float = 0.5) -> None:
        super().__init__(None, threshold)
        self.seed = seed

    def describe(self) -> dict:
        return {**super().describe(), "seed": self.seed}

    def _rng(self, t: float) -> random.Random:
        key = f"{self.seed}|{self.episode_id}|{t:.3f}".encode()
        return random.Random(int(hashlib.sha256(key).hexdigest()[:16], 16))

    def observe(self, frames) -> dict:
        return {}

    def update(self, t: float, window: tuple[float, float], evidence: dict) -> Tick:
        rng = self._rng(t)
        tick = Tick(t, window, round(rng.random(), 6), rng.choice(ERROR_TYPES), evidence=evidence)
        self._raise(tick, kind="window")
        return tick

    def finish(self, t_end: float) -> Tick:
        rng = self._rng(-1.0)
        tick = Tick(t_end, (t_end, t_end), round(rng.random(), 6), rng.choice(ERROR_TYPES), final=True)
        self._raise(tick, kind="end")
        return tick


class DirectStreamMonitor(OnlineMonitor):
    name = "direct"

    def observe(self, frames) -> dict:
        import time

        from ego_adr.reasoning.pipeline import Item

        item = Item(self.sample, frames=frames)
        t0 = time.perf_counter()
        self.pipe.answer_one_pass([item])
        ev: dict = {"model_s": round(time.perf_counter() - t0, 4)}
        if item.result is None:
            return {**ev, "failure": item.failure or "no answer"}
        ev["classification"] = item.result.to_dict()
        if (item.result.raw or "").strip():  # what the reply is about, for the end check's step tracking
            ev["match"] = self.pipe.match_steps([item], [item.result.raw])[0].to_dict()
        return ev

    def window_tick(self, t: float, window: tuple[float, float], evidence: dict, p: float, etype: str | None,
                    m: dict) -> Tick:
        """The one-pass answer's belief alone; the match only keeps the state for the end check."""
        self._progress(t, m.get("index"), m.get("method"))
        reached = m.get("index") is not None and m.get("method") in CONFIDENT_METHODS
        return Tick(t, window, round(p, 6), etype, evidence=evidence, match_method=m.get("method"),
                    reached=reached if m else None)
