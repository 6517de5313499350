"""Run identity: an output folder holds the results of exactly one set of settings, and says which.

Why: resuming into a folder is how a long run survives a crash, but a rerun with *other* settings used to append
its rows beside the old ones and title the mixed report after the last command (issue 11). So every folder
carries ``identity.json`` -- everything that changes what a row means: the model and its fingerprint, backend,
mode and the route the probe chose, protocol, frames and sampling, the prompts' versions, a digest of the samples
(annotations: ids, windows, actions, labels, procedures), a digest of the videos they use (relative path and size
of each file), sources, limit and shard. The rule, for the runner, the ablation grid and the green agent alike:

- an empty or new folder is claimed and its identity written;
- the same identity resumes;
- any difference stops at once with one line naming the differing settings and the two ways out: another
  ``--out``, or ``--fresh`` to discard the folder's results and start over;
- a folder with results but no identity (written before identities existed) is treated as different.

The identity is checked in two steps: :func:`claim` before any work, with what is known from the settings and the
data; :func:`confirm` once the model is loaded, with its fingerprint and the probe's route (both unknown until
then). A resume with nothing left to do never loads the model, so only the first step applies to it.

:class:`FolderLock` (an ``flock`` on ``<folder>/.lock``, released by the kernel when the process dies, so a
killed run never leaves a stale lock) stops two live runs from writing one folder.

Library API (e.g. for the green agent): ``with FolderLock(out): claim(out, my_identity_dict, fresh=...)``, where the
identity is any flat JSON-serialisable dict; :func:`describe_difference` renders the one-line message.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ego_adr.folders import (  # noqa: F401  (re-exported: the folder rule lives in the shared leaf)
    COMMAND_KEY,
    IDENTITY_FILE,
    LOCK_FILE,
    RESULT_FILES,
    RUN_FILES,
    WAYS_OUT,
    FolderBusy,
    FolderLock,
    IdentityMismatch,
    NotOurFolder,
    OutputFolder,
    check_ours,
    claim,
    confirm,
    describe_difference,
    differences,
    discard,
    has_results,
    read_identity,
    said_removed,
    start_over,
)

#: Run settings that are not part of a folder's identity, and why. Every other field of
#: :class:`~ego_adr.run.config.RunConfig` is, so a new setting joins the identity unless it is named here
#: (``tests/run/test_identity.py`` holds the two lists to the dataclass).
NOT_IDENTITY = {
    "data_root": "the annotations digest stands for it: a moved data folder is the same run",
    "video_root": "the videos digest stands for it",
    "sources": "the sources the loader resolved are recorded instead (the default list, aliases expanded)",
    "output_dir": "it is the folder",
    "device": "where the model runs, not what it computes",
    "batch_size": "how many requests go together, not what is asked",
    "tensor_parallel_size": "how the model is spread over GPUs, not what it computes",
    "base_url": "recorded only where the backend's spec forwards it (a served model)",
    "num_shards": "recorded with shard_index as shard",
    "shard_index": "recorded with num_shards as shard",
    "prefetch": "decoding ahead, not what is decoded",
    "decode_workers": "decoding threads, not what is decoded",
    "cache_dir": "where cached outputs live; the stage cache key decides what is reused",
    "use_cache": "whether outputs are reused, not what they are",
    "protocol_options": "recorded resolved, as protocol_settings",
    "extra": "free-form notes",
}


#: The command a run folder's identity records (:data:`ego_adr.folders.COMMAND_KEY`): ``python -m ego_adr.run``'s,
#: and the same for a chunked launch (a launch folder is one run; ``launch.json`` tells it from a plain one) and the
#: cells of an experiment grid, so ``--fresh`` of any of them starts only a run's folder over.
RUN_KIND = "run"

#: Settings added after folders had been written, left out of the identity at the paper's value (the value every
#: earlier folder was run with), so those folders still resume; any other value is part of it.
OMITTED_AT_PAPER_VALUE = {"scoring": "generate"}

#: Part of the identity of an open-ended run only.
OPEN_END_ONLY = ("judges", "judge_backend", "qa_selection")


def _digest(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def samples_digest(samples) -> str:
    """What the annotations say about the run's samples (ids, windows, actions, labels, procedures, QA pairs):
    a re-downloaded or edited annotation file changes it, a moved data folder does not."""
    recs = []
    for s in samples:
        recs.append([s.sample_id, s.source, s.task_id, s.video_id, s.start, s.end, s.action, list(s.ground_truth),
                     hashlib.sha256((s.procedure or "").encode()).hexdigest()[:12],
                     [[getattr(q, "question", None), getattr(q, "answer", None)] for q in (s.qa_pairs or [])]])
    return _digest(recs)


def videos_digest(samples, video_root: str | os.PathLike | None) -> str:
    """Relative path and size of every video the samples use ("missing" where there is none): another video
    root with other files changes it; a copied folder does not."""
    root = Path(video_root).resolve() if video_root else None
    seen: dict[str, object] = {}
    for s in samples:
        if not s.video_path or s.video_path in seen:
            continue
        p = Path(s.video_path)
        try:
            rel = str(p.resolve().relative_to(root)) if root else p.name
        except ValueError:
            rel = p.name
        try:
            seen[s.video_path] = [rel, p.stat().st_size]
        except OSError:
            seen[s.video_path] = [rel, "missing"]
    return _digest(sorted(seen.values(), key=str))


def _protocol_settings(cfg) -> dict | None:
    from dataclasses import asdict

    try:
        return asdict(cfg.protocol_settings)
    except (AttributeError, ValueError, TypeError):  # a config object without protocol fields (library use)
        return None


def run_identity(cfg, samples, info: dict) -> dict:
    """The identity of a run of ``cfg`` over ``samples`` (settings known before the model is loaded): every run
    setting but those in :data:`NOT_IDENTITY` (and the open-ended ones for other tasks), then what is derived."""
    from dataclasses import fields

    from ego_adr.models.backends import BACKENDS
    from ego_adr.reasoning import prompts as P
    from ego_adr.reasoning.probe import PROBE_VERSION

    skip = set(NOT_IDENTITY) | (set() if cfg.task == "open-end" else set(OPEN_END_ONLY))
    ident = {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.name not in skip}
    ident["model"] = cfg.model or "tiny-demo"
    if cfg.task == "open-end":
        ident["judges"] = list(cfg.judges)
    ident.update({
        "base_url": cfg.base_url if "base_url" in BACKENDS[cfg.backend].settings else None,
        # every input the protocol sets (sampling, clip rate, resize, step text, question, answers, budget)
        "protocol_settings": _protocol_settings(cfg),
        "prompts": _digest(getattr(P, "VERSIONS", {})),
        "probe_version": PROBE_VERSION,
        "sources": list(info.get("sources") or []),
        "shard": f"{cfg.shard_index}/{cfg.num_shards}",
        "annotations": samples_digest(samples),
        "videos": videos_digest(samples, info.get("video_root")),
    })
    for key, paper in OMITTED_AT_PAPER_VALUE.items():
        if ident.get(key) == paper:
            del ident[key]
    return ident
