"""Issue 11: ``--cache-dir`` holds every cache (demo set, tiny model, probe verdicts, stage cache); ``--limit N``
is a total dealt round robin over the sources, so a short run never silently drops a source."""

import os

from ego_adr.run.config import RunConfig
from ego_adr.run.runner import apply_limit, execute


def test_cache_dir_holds_every_cache(tmp_path, monkeypatch):
    cache, default = tmp_path / "my_cache", tmp_path / "default_cache"
    # a default cache of this test's own: the suite's is shared with the other xdist worker, which writes to it
    monkeypatch.setenv("EGO_ADR_CACHE", str(default))
    execute(RunConfig(output_dir=str(tmp_path / "o"), cache_dir=str(cache), limit=1, max_new_tokens=4,
                      batch_size=1), progress=False)
    names = os.listdir(cache)
    assert any(n.startswith("demo-v") for n in names), names
    assert any(n.startswith("tiny-qwen2.5-vl") for n in names), names
    assert "stage_cache.sqlite" in names and list((cache / "probe").glob("*.json"))
    assert not default.exists() or not os.listdir(default)  # nothing went to the default cache
    assert os.environ["EGO_ADR_CACHE"] == str(default)  # and the setting does not leak out of the run


def test_limit_is_a_total_dealt_round_robin_over_the_sources(shared_data):
    from ego_adr.data.egoerrorvqa import load_samples

    samples = load_samples(shared_data)
    sources = list(dict.fromkeys(s.source for s in samples))
    assert len(sources) == 4
    picked, note = apply_limit(samples, 5)
    assert len(picked) == 5 and {s.source for s in picked} == set(sources) and note is None
    # each source contributes its first samples, in file order
    for src in sources:
        mine = [s.sample_id for s in picked if s.source == src]
        assert mine == [s.sample_id for s in samples if s.source == src][: len(mine)]
    picked, note = apply_limit(samples, 2)
    assert len(picked) == 2 and note and "total" in note
    assert all(src in note for src in sources if src not in {s.source for s in picked})
