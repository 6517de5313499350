"""``monitoring download`` lays out every file the CaptainCook4D benchmarks and the graph experiment read, each
pinned to the bytes of its commit (the download itself is tested on a served copy in tests/monitoring)."""

from __future__ import annotations

import hashlib

from ego_adr.captaincook4d import sources as S
from ego_adr.online_mistakes.data import download as dl


def test_every_file_the_benchmarks_read_is_downloaded_and_pinned_to_the_shared_bytes(cc4d_root):
    dests = {dest: digest for _, _, dest, digest in dl.FILES if dest}
    src = S.load(cc4d_root)
    needed = [S.ERRORS, S.DESCRIPTIONS, S.RECIPE_STEPS, S.COMPLETE, S.SPLIT, S.DTGL_ANNOTATIONS,
              *(f"{S.GRAPHS}/{r}.json" for r in src.recipe_steps), *(f"{S.DTGL_GRAPHS}/{r}.json" for r in src.recipe_steps)]
    assert [n for n in needed if n not in dests] == []
    for rel in (*needed, f"{S.CC4D_DIR}/LICENSE", f"{S.CC4D_DIR}/ANNOTATIONS.md"):
        assert hashlib.sha256((cc4d_root / rel).read_bytes()).hexdigest() == dests[rel], rel
