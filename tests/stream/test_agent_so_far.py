"""The white agent answers "what has gone wrong so far?" about a recording up to <end_ts>, never past it."""

import asyncio

import pytest

from ego_adr.agents.messages import open_question, white_message
from ego_adr.agents.so_far import is_so_far_question


def test_so_far_questions_are_recognised():
    assert is_so_far_question("What has gone wrong so far?")
    assert is_so_far_question("Any mistakes so far?")
    assert is_so_far_question("so far, what went wrong")
    assert not is_so_far_question("Did I make a mistake when I poured the water?")
    assert not is_so_far_question("What is the person doing so far from the table?")


@pytest.fixture(scope="module")
def agent(tiny_model_dir, tmp_path_factory):
    from ego_adr.agents.white import WhiteAgent
    from ego_adr.models import load_model
    from ego_adr.video.synth_recording import ensure_recordings

    root = ensure_recordings()
    a = WhiteAgent(load_model(str(tiny_model_dir), device="cpu"), [root], mode="shallow", frames=4,
                   cache_dir=tmp_path_factory.mktemp("agent_cache"), max_new_tokens=12)
    yield a, root
    a.close()


def _ask(a, video, procedure, until):
    return asyncio.run(a.answer(white_message(str(video), open_question(procedure, "What has gone wrong so far?"),
                                              0.0, until)))


def test_agent_watches_only_up_to_end_ts(agent):
    from ego_adr.stream.episodes import demo_episode

    a, _ = agent
    ep = demo_episode()
    part = _ask(a, ep["video_path"], ep["procedure"], 12.0)
    meta = part.metadata["ego_adr"]
    assert meta["task"] == "stream-so-far" and meta["watched_until"] == 12.0 and meta["n_ticks"] == 3
    assert all(x["t"] <= 12.0 and x["kind"] == "window" for x in meta["alerts"])  # no omission check before the end
    assert part.text.startswith("Up to 12.0 s")
    whole = _ask(a, ep["video_path"], ep["procedure"], None)  # -1: the whole recording, end check included
    wm = whole.metadata["ego_adr"]
    assert wm["watched_until"] == pytest.approx(wm["duration"]) and wm["n_ticks"] > 3
    assert [x for x in wm["alerts"] if x["t"] <= 12.0] == meta["alerts"]
    assert any(x["kind"] == "end" for x in wm["alerts"]) == ("went wrong" in whole.text and "Omission" in whole.text)
