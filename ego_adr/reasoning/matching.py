"""Key-step matching: which step of the procedure bank does an action annotation refer to?

Paper Section 5.2 and Appendix G: a TF-IDF index over all step descriptions with unigram and bigram features
and scikit-learn's English stop words; the step with the highest cosine similarity wins; when that similarity
is below tau = 0.25 the matcher falls back to character-level matching with difflib's SequenceMatcher
(Ratcliff/Obershelp). Matching is case-insensitive. No neural inference, so it is deterministic and cheap; the
index is built once per bank and reused for every query of that task.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

TAU = 0.25  # Appendix G: "empirically set to 0.25"


@dataclass(frozen=True)
class StepMatch:
    index: int
    step: str
    score: float
    method: str  # "tfidf" | "difflib" | "given" (index supplied by the annotation) | "model"
    previous: str | None
    next: str | None
    tfidf_score: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


class KeyStepMatcher:
    """TF-IDF (1-2-grams, English stop words) cosine matcher with a difflib fallback below ``tau``."""

    def __init__(self, steps: Sequence[str], tau: float = TAU) -> None:
        if not steps:
            raise ValueError("KeyStepMatcher needs at least one step")
        self.steps = [str(s) for s in steps]
        self.tau = float(tau)
        self._lower = [s.lower() for s in self.steps]
        from sklearn.feature_extraction.text import TfidfVectorizer

        self._vectorizer = TfidfVectorizer(ngram_range=(1, 2), stop_words="english", lowercase=True)
        try:
            self._matrix = self._vectorizer.fit_transform(self.steps)
        except ValueError:  # every step is stop words only: TF-IDF has no vocabulary, difflib still works
            self._matrix = None

    def tfidf_scores(self, query: str) -> list[float]:
        if self._matrix is None:
            return [0.0] * len(self.steps)
        q = self._vectorizer.transform([query])
        # rows are L2-normalised by TfidfVectorizer, so the dot product is the cosine similarity
        return (self._matrix @ q.T).toarray().ravel().tolist()

    def difflib_scores(self, query: str) -> list[float]:
        q = query.lower()
        return [difflib.SequenceMatcher(None, q, s).ratio() for s in self._lower]

    def match(self, query: str) -> StepMatch:
        query = (query or "").strip()
        scores = self.tfidf_scores(query) if query else [0.0] * len(self.steps)
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        if scores[best] >= self.tau:
            return self.at(best, scores[best], "tfidf", tfidf_score=scores[best])
        tf_best = scores[best]
        ratios = self.difflib_scores(query)
        best = max(range(len(ratios)), key=lambda i: (ratios[i], -i))
        return self.at(best, ratios[best], "difflib", tfidf_score=tf_best)

    def at(self, index: int, score: float, method: str, tfidf_score: float = 0.0) -> StepMatch:
        """The match for a known step index (with its neighbours)."""
        if not 0 <= index < len(self.steps):
            raise IndexError(f"step index {index} outside 0..{len(self.steps) - 1}")
        return StepMatch(
            index=index,
            step=self.steps[index],
            score=float(score),
            method=method,
            previous=self.steps[index - 1] if index > 0 else None,
            next=self.steps[index + 1] if index + 1 < len(self.steps) else None,
            tfidf_score=float(tfidf_score),
        )
