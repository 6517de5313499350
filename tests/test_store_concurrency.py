"""Two processes at once on one cache (two test workers, two runs sharing a ``--cache-dir``): an atomic write of one
file by both never fails or leaves half a file, and a folder that both ask :func:`ego_adr.store.build_once` for is
built once, the second asker waiting for the first one's folder (issue 46: two workers each built the same
45-second run, and both wrote the same fold files through one temporary name)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WRITER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from ego_adr.store import write_json
path, me = sys.argv[2], sys.argv[3]
for i in range(300):
    write_json(path, {"writer": me, "i": i, "pad": "x" * 200_000})
"""

BUILDER = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ego_adr.store import build_once
final, log = Path(sys.argv[2]), Path(sys.argv[3])

def build(out):
    with log.open("a") as f:
        f.write("built\n")
    time.sleep(1.5)
    out.mkdir(parents=True)
    (out / "done.txt").write_text("yes")

print(build_once(final, build, lambda p: (p / "done.txt").is_file()))
"""


def _both(script: str, *argv: str) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-c", script, str(REPO), *argv, str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in range(2)]
    return [subprocess.CompletedProcess(p.args, p.wait(timeout=120), p.stdout.read(), p.stderr.read())
            for p in procs]


def test_two_processes_writing_one_file_each_rename_a_whole_file_of_their_own(tmp_path):
    path = tmp_path / "fold.json"
    for r in _both(WRITER, str(path)):
        assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(path.read_text())  # whole: one writer's last file
    assert got["i"] == 299 and len(got["pad"]) == 200_000
    assert [p.name for p in tmp_path.iterdir()] == ["fold.json"]  # no temporary file left behind


def test_two_processes_asking_for_one_folder_build_it_once(tmp_path):
    final, log = tmp_path / "cache" / "tent-all", tmp_path / "builds.log"
    results = _both(BUILDER, str(final), str(log))
    for r in results:
        assert r.returncode == 0, r.stderr[-2000:]
    assert [r.stdout.strip().splitlines()[-1] for r in results] == [str(final)] * 2
    assert log.read_text().splitlines() == ["built"]  # the second one waited and found the first one's folder
    assert (final / "done.txt").read_text() == "yes"
