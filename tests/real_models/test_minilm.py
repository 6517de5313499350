"""MiniLM sentence embeddings from their PyPI package (issue 36): loaded offline, and the named ``minilm`` key-step
matcher beside the paper's TF-IDF one, with the paper's fallback rule."""

from __future__ import annotations

import pytest

from ego_adr.reasoning.embed_matching import EmbeddingStepMatcher, make_matcher
from ego_adr.reasoning.matching import KeyStepMatcher

STEPS = ["Crack two eggs into the mixing bowl", "Whisk the eggs with a fork", "Heat the pan on the stove",
         "Pour the eggs into the hot pan", "Serve the omelette on a plate"]


def test_minilm_loads_offline_and_scores_meaning(minilm):
    a, b, c = minilm.encode(["person cracks an egg into the bowl", "someone breaks an egg into a mixing bowl",
                             "technician tightens the bolt"], normalize_embeddings=True)
    assert a.shape == (384,)
    assert float(a @ b) > 0.6 > 0.3 > float(a @ c)  # a paraphrase is near, an unrelated action far


def test_the_minilm_matcher_finds_a_step_written_in_other_words(minilm):
    query = "someone breaks an egg over a bowl"
    tfidf = KeyStepMatcher(STEPS).match(query)
    emb = make_matcher("minilm", STEPS, embedder=minilm).match(query)
    assert emb.method == "minilm" and emb.index == 0 and emb.score >= 0.25
    assert emb.tfidf_score == pytest.approx(KeyStepMatcher(STEPS).tfidf_scores(query)[0])  # recorded beside
    assert tfidf.method in ("tfidf", "difflib")


def test_below_tau_the_minilm_matcher_falls_back_to_difflib_like_the_papers(minilm):
    m = EmbeddingStepMatcher(STEPS, minilm)
    q = "xqzt 123"
    best = max(m.embedding_scores(q))
    got = m.match(q)
    assert best < 0.25 and got.method == "difflib"
    assert got.index == KeyStepMatcher(STEPS).match(q).index  # the same fallback as the TF-IDF matcher's
    with pytest.raises(ValueError, match="matcher must be one of"):
        make_matcher("bm25", STEPS)
