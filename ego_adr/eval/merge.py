"""Merge the predictions files of data-parallel shards (or of interrupted and resumed runs) into one.

Rule (shared with :func:`ego_adr.eval.mc.dedup_rows`): one row per ``sample_id`` (per ``(sample_id,
qa_index)`` for open-ended answer and judgement rows, one per question), the last one seen in input
order -- except that a row without an answer never replaces a row with one (valid or unparseable), so a crashed
retry cannot erase an answer. Output order is each sample's first appearance in input order: shards given in
shard order, each written in dataset order by ``ego_adr.run``, stay in dataset order. Glob patterns passed
quoted are expanded here in natural order (shard-2 before shard-10).

**One identity.** Each input's folder says which settings produced it (``identity.json``, written by every run;
see ``ego_adr.run.identity``). Inputs of different identities -- other than the shard, which is what merging
joins -- are refused unless ``allow_mixed`` is given (issue 18: the predictions of two different runs used to
be joined with only "8 duplicates dropped" to show for it); a mixed merge names the differing settings in its
result, on stdout and in ``<out>.merge.json`` beside the merged file, so it never passes for one run.
"""

from __future__ import annotations

import glob
import json
import re
from collections import Counter
from pathlib import Path

from ego_adr.eval.mc import dedup_rows, has_answer, is_open_row, load_predictions, row_status
from ego_adr.store import write_jsonl


def _natural(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def expand_inputs(patterns: list[str]) -> list[Path]:
    """Paths from explicit names or glob patterns; raises when a pattern matches nothing."""
    out: list[Path] = []
    for p in patterns:
        if any(ch in p for ch in "*?["):
            hits = sorted(glob.glob(p), key=_natural)
            if not hits:
                raise FileNotFoundError(f"no file matches {p!r}")
            out += [Path(h) for h in hits]
        else:
            if not Path(p).is_file():
                raise FileNotFoundError(f"input predictions file not found: {p}")
            out.append(Path(p))
    return out


#: Identity keys merging is allowed to join: the shard of a data-parallel run, and what depends on it (the digests
#: of the shard's own samples and videos). Two inputs of the *same* shard must still agree on those.
MERGEABLE_KEYS = ("shard",)
SHARD_KEYS = ("annotations", "videos")


def folder_identity(path: Path) -> dict | None:
    """The identity a predictions file's folder records (``None`` when it has none, e.g. a hand-made file)."""
    p = Path(path).parent / "identity.json"
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"unreadable": True}
    return data if isinstance(data, dict) else {"unreadable": True}


def identity_differences(identities: list[tuple[str, dict]]) -> list[str]:
    """The settings (besides :data:`MERGEABLE_KEYS`) on which the identities that know them disagree."""
    keys = dict.fromkeys(k for _, ident in identities for k in ident if k not in MERGEABLE_KEYS + SHARD_KEYS)
    diff = [k for k in keys if len({json.dumps(i.get(k), sort_keys=True) for _, i in identities if k in i}) > 1]
    by_shard: dict[str, list[dict]] = {}
    for _, i in identities:
        by_shard.setdefault(str(i.get("shard")), []).append(i)
    for k in SHARD_KEYS:  # one shard of two runs over different data is not one run
        if any(len({json.dumps(i.get(k)) for i in same if k in i}) > 1 for same in by_shard.values()):
            diff.append(k)
    return diff


def check_identities(paths: list[Path], out_path: Path, allow_mixed: bool) -> dict:
    """Refuse (``ValueError``) inputs of different identities, or an output folder that holds another run,
    unless ``allow_mixed``; returns what was compared for the caller to record."""
    known = [(str(p), i) for p in paths if (i := folder_identity(p)) is not None]
    target = folder_identity(out_path)
    if target is not None:  # the whole run's folder (the launcher's): its data digests cover every shard
        target = {k: v for k, v in target.items() if k not in SHARD_KEYS}
    compared = known + ([(str(out_path.parent), target)] if target is not None else [])
    diff = identity_differences(compared)
    if diff and not allow_mixed:
        where = ", ".join(dict.fromkeys(Path(p).parent.name or p for p, i in compared
                                        if any(k in i for k in diff)))
        raise ValueError(f"the inputs (and output folder) hold runs of different settings ({', '.join(diff[:6])} "
                         f"differ between {where}); merge one run's shards only, or pass --allow-mixed to join "
                         "them anyway (the merge then says so)")
    return {"allow_mixed": bool(allow_mixed), "mixed": diff, "with_identity": len(known),
            "without_identity": [str(p) for p in paths if folder_identity(p) is None]}


def merge_predictions(inputs: list[str | Path], out_path: str | Path, allow_mixed: bool = False) -> dict:
    """Merge ``inputs`` into ``out_path`` (written atomically); returns counts for the caller to print.
    Raises ``ValueError`` for inputs of different identities unless ``allow_mixed`` (module docstring)."""
    paths = expand_inputs([str(p) for p in inputs])
    out_path = Path(out_path)
    if any(p.resolve() == out_path.resolve() for p in paths):
        raise ValueError(f"output {out_path} is also an input; write the merge to a new file")
    identity = check_identities(paths, out_path, allow_mixed)
    rows: list[dict] = []
    per_input: list[tuple[str, int]] = []
    for p in paths:
        try:
            r = load_predictions(p)
        except UnicodeDecodeError:
            raise ValueError(f"{p} is not a text predictions file (binary?)") from None
        if not r:
            raise ValueError(f"{p} holds no prediction rows (empty, or no line is a JSON row); leave it out")
        per_input.append((str(p), len(r)))
        rows += r
    merged = dedup_rows(rows)
    write_jsonl(out_path, merged)
    side = out_path.with_name(out_path.name.removesuffix(".jsonl") + ".merge.json")
    if identity["mixed"]:
        side.write_text(json.dumps({**identity, "inputs": [str(p) for p in paths]}, indent=1), encoding="utf-8")
    elif side.is_file():
        side.unlink()  # a clean merge replaces an earlier mixed one
    status = Counter(("answered" if has_answer(r) else "failed") if is_open_row(r) else row_status(r)
                     for r in merged)
    return {"inputs": per_input, "rows_read": len(rows), "rows_written": len(merged),
            "duplicates_dropped": len(rows) - len(merged), "answered": status.get("answered", 0),
            "unparseable": status.get("unparseable", 0), "no_answer": status.get("failed", 0),
            "per_source": dict(Counter(str(r.get("source")) for r in merged)), "out": str(out_path),
            "identity": identity}
