"""Issue 18, item 9: ``--frames 7`` on a family whose video encoder pairs frames (temporal patch 2) says what
the model really sees; a multiple of the patch says nothing."""

from ego_adr.run.checks import frames_note
from ego_adr.run.config import RunConfig


def test_an_odd_frame_count_on_a_temporal_patch_2_family_gets_a_note(tiny_model_dir):
    note = frames_note(RunConfig(frames=7))
    assert note and "2 frames per time step" in note and "to make 8 (4 time steps)" in note
    assert frames_note(RunConfig(frames=8)) is None
    assert frames_note(RunConfig(frames=7, backend="openai", model="x", base_url="http://127.0.0.1:1/v1")) is None
