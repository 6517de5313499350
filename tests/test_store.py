"""JsonlStore: durable appends, torn-tail repair, and a real SIGKILL + resume with a child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from ego_adr.store import JsonlStore, read_jsonl

REPO = Path(__file__).resolve().parents[1]

# The child is a tiny "runner": it skips ids already done and appends the rest one by one, as the real runner does.
CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from ego_adr.store import JsonlStore
path, n, delay = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with JsonlStore(path) as store:
    done = store.done_ids()
    for i in range(n):
        sid = f"s{i:04d}"
        if sid in done:
            continue
        store.append({"sample_id": sid, "answer": "é" * 50 + "x" * 2000, "i": i})
        time.sleep(delay)
print("finished", flush=True)
"""


def _run_child(path: Path, n: int, delay: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(REPO), str(path), str(n), str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_sigkill_halfway_then_resume_has_every_id_exactly_once(tmp_path):
    path = tmp_path / "predictions.jsonl"
    n = 60
    child = _run_child(path, n, delay=0.01)
    deadline = time.time() + 30
    while _count_lines(path) < n // 2:
        assert child.poll() is None, child.stderr.read().decode()
        assert time.time() < deadline, "child never got half-way"
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    before = read_jsonl(path)
    assert n // 2 <= len(before) < n, "the kill must have happened half-way"

    # Simulate the worst instant of a kill: a write cut off mid-line.
    with open(path, "ab") as f:
        f.write(b'{"sample_id": "s9999", "answer": "cut off he')

    resumed = _run_child(path, n, delay=0.0)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err.decode()
    rows = read_jsonl(path)
    counts = Counter(r["sample_id"] for r in rows)
    assert set(counts) == {f"s{i:04d}" for i in range(n)}
    assert max(counts.values()) == 1
    assert [r["i"] for r in rows] == sorted(r["i"] for r in rows)  # resume appended, in order
    assert (tmp_path / "predictions.jsonl.corrupt").read_bytes().startswith(b'{"sample_id": "s9999"')
    assert path.read_bytes().endswith(b"\n")


def test_hand_truncated_last_line_is_repaired_and_kept_for_audit(tmp_path):
    path = tmp_path / "p.jsonl"
    good = [{"sample_id": f"a{i}", "text": "ok"} for i in range(3)]
    full = "".join(json.dumps(r) + "\n" for r in good).encode()
    torn = json.dumps({"sample_id": "a3", "text": "lost"}).encode()[:-7]
    path.write_bytes(full + torn)

    assert [r["sample_id"] for r in read_jsonl(path)] == ["a0", "a1", "a2"]  # tolerant reader, no repair
    assert path.read_bytes() == full + torn

    with JsonlStore(path) as store:
        assert store.dropped_bytes == len(torn)
        assert path.read_bytes() == full
        assert (tmp_path / "p.jsonl.corrupt").read_bytes() == torn + b"\n"
        assert store.done_ids() == {"a0", "a1", "a2"}
        store.append({"sample_id": "a3", "text": "redo"})
    assert [r["sample_id"] for r in read_jsonl(path)] == ["a0", "a1", "a2", "a3"]
    with JsonlStore(path) as store:  # an intact file is left alone
        assert store.dropped_bytes == 0


def test_last_line_with_newline_but_invalid_json_is_dropped(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"sample_id": "a"}\n{"sample_id": \x00\x01garbage}\n')
    with JsonlStore(path) as store:
        assert store.dropped_bytes > 0
        assert path.read_bytes() == b'{"sample_id": "a"}\n'


def test_only_line_torn(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"sample_id": "a"')
    with JsonlStore(path) as store:
        assert store.rows() == []
        assert path.read_bytes() == b""


def test_corrupt_middle_line_is_skipped_not_fatal(tmp_path, caplog):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"sample_id": "a"}\nnot json at all\n[1, 2]\n{"sample_id": "b"}\n')
    with JsonlStore(path) as store:
        assert store.dropped_bytes == 0
        assert [r["sample_id"] for r in store.rows()] == ["a", "b"]
    assert "corrupt" in caplog.text


def test_unicode_roundtrip_and_composite_keys(tmp_path):
    with JsonlStore(tmp_path / "sub" / "j.jsonl") as store:
        store.append({"sample_id": "x", "qa_index": 0, "judge": "q", "answer": "切菜 — naïve"})
        store.append({"sample_id": "x", "qa_index": 1, "judge": "q"})
        store.append({"other": 1})
        assert store.rows()[0]["answer"] == "切菜 — naïve"
        assert "切菜" in (tmp_path / "sub" / "j.jsonl").read_text(encoding="utf-8")  # ensure_ascii=False
        assert store.done_ids(("sample_id", "qa_index")) == {("x", 0), ("x", 1)}
        assert store.done_ids() == {"x"}
    with pytest.raises(ValueError):
        store.append({"sample_id": "y"})
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "missing.jsonl")


def test_threads_never_interleave_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    with JsonlStore(path) as store:

        def work(t):
            for i in range(50):
                store.append({"sample_id": f"{t}-{i}", "pad": "z" * (100 * (i % 7))})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    lines = path.read_bytes().split(b"\n")[:-1]
    assert len(lines) == 200
    assert len({json.loads(x)["sample_id"] for x in lines}) == 200
    assert os.path.getsize(path) == sum(len(x) + 1 for x in lines)
