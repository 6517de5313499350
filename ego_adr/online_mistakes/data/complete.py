"""The complete-trial step-stream benchmarks ``assembly101-complete`` and ``epic-tent-complete``: every step of every
test recording, every mistake scored, the person going on after each (issue 35).

Assembly101-O and EPIC-Tent-O (:mod:`.cut`) cut each test recording at its first mistake, which then is always the
last step: a rule that reads only a step's position scores well there, and no later mistake is ever tested. Here
the same test recordings (DTGL's test splits: 182 Assembly101 recordings, 15 EPIC-Tent ones) are read whole from
the datasets' own annotation files, labelled by the rules of :mod:`.sources`.

- **Training** is the cut benchmark's, unchanged: DTGL's ``train.json`` (135 / 13 recordings) and its taxonomy,
  given under the cut benchmark's name, so every monitor is fitted exactly as for Assembly101-O / EPIC-Tent-O
  (the same cross-validation plan and settings). No Assembly101 training recording holds a mistake row in its CSV
  (all 970 rows are ``correct``). EPIC-Tent's training recordings do carry timed errors in its error file
  (:func:`training_errors` counts the steps they mark): every monitor, one-class or not, trains on those steps as
  if they were correct, as DTGL's methods do, because both benchmarks give correct sequences only; a one-class
  model thus learns a few mistaken transitions as permitted.
- **Streams**: ``oracle`` (every annotated segment of the recording, in time order) or a file in PREGO's format
  ``{video: {"pred": [step ids]}}`` giving one step per annotated segment of every test recording (a segment-level
  recogniser's output: position ``i`` carries the label of segment ``i``). A sequence shorter or longer than its
  annotated recording cannot be labelled and is refused, as is a file missing a test recording.
- **Step ids** are DTGL's; a segment whose step DTGL's taxonomy lacks gets an id after DTGL's (sorted by name) and
  stays in the stream; :attr:`CompleteStream.extra_steps` lists them and ``metrics.json`` records them.
- **Option** ``corrections``: ``correct`` (default: a correction step is scored as a correct step) or ``exclude``
  (a correction step is still fed to the monitor but left out of every score).

Before anything is scored, each complete recording's beginning is checked against DTGL's cut ``test.json`` (the
steps up to its first mistake on Assembly101, its first ``n`` steps on EPIC-Tent): sources that are not the ones
DTGL's files were built from are refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.online_mistakes.data import cut as D
from ego_adr.online_mistakes.data import sources as S
from ego_adr.online_mistakes.types import TrainingSet
from ego_adr.registry import Registry

#: What ``--corrections`` does with a step the dataset labels a correction (name -> what it is).
CORRECTIONS: Registry[str] = Registry("corrections rule", {
    "correct": "a correction is scored as a correct step (the default)",
    "exclude": "a correction is left out of the scores (the monitor still sees it)"}, describe=str)


@dataclass(frozen=True)
class CompleteSpec:
    name: str
    cut: str  # the cut benchmark whose training set and test recordings this one reads whole
    dtgl_dir: str
    scenario: str
    title: str


#: The complete-trial benchmarks' data (one line per benchmark).
COMPLETE: Registry[CompleteSpec] = Registry("complete-trial benchmark", (
    CompleteSpec("assembly101-complete", "assembly101-o", "assembly101", "assembly101",
                 "Assembly101, complete trials"),
    CompleteSpec("epic-tent-complete", "epic-tent-o", "epic-tent", "epic-tent", "EPIC-Tent, complete trials"),
), describe=lambda sp: sp.title)


@dataclass(frozen=True)
class CompleteRecording:
    video: str
    steps: tuple[int, ...]
    labels: tuple[int, ...]  # 1: mistake
    source_labels: tuple[str, ...]  # correct, mistake, correction
    kinds: tuple[tuple[str, ...], ...]
    scored: tuple[bool, ...]
    names: tuple[str, ...]


@dataclass
class CompleteStream:
    benchmark: str
    name: str  # oracle, or the file's path
    source: str
    sha256: str
    recordings: tuple[CompleteRecording, ...]
    taxonomy: dict[int, str]
    extra_steps: dict[int, str]
    corrections: str = "correct"
    extra_videos: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


def spec(benchmark: str) -> CompleteSpec:
    if benchmark not in COMPLETE:
        raise UserError(f"--benchmark {benchmark!r} is not one of {', '.join([*D.BENCHMARKS.names(), *COMPLETE.names()])}")
    return COMPLETE[benchmark]


def training(root: str | os.PathLike, benchmark: str) -> TrainingSet:
    """The cut benchmark's training set, unchanged (module docstring)."""
    return D.load_training(root, spec(benchmark).cut)


def _segments(root, sp: CompleteSpec, videos: list[str], tax: Mapping[int, str]) -> dict[str, list[S.Segment]]:
    if sp.dtgl_dir == "assembly101":
        return {v: S.assembly101(root, v) for v in videos}
    return S.epic_tent(root, videos, dict(tax))


def _taxonomy(root, sp: CompleteSpec, segs: Mapping[str, list[S.Segment]]) -> tuple[dict, dict]:
    _, tax, _ = D.read_test(root, sp.cut)
    known = set(tax.values())
    extra_names = sorted({s.name for ss in segs.values() for s in ss if s.name not in known})
    extra = {len(tax) + i: n for i, n in enumerate(extra_names)}
    return {**tax, **extra}, extra


def _check_against_cut(sp: CompleteSpec, path, segs: list[dict], video: str, steps: list[int],
                       labels: list[str]) -> None:
    cut = [s["step_id"] for s in segs]
    if sp.dtgl_dir == "assembly101":
        n = labels.index("mistake") + 1 if "mistake" in labels else len(labels)
    else:
        n = len(cut)
    if steps[:n] != cut:
        raise UserError(f"{video}: the source annotations do not begin with the steps of {path} ({cut[:6]}... vs "
                        f"{steps[:6]}...): the sources are not the ones DTGL's files were built from; {S.HINT}")


def annotated(root: str | os.PathLike, benchmark: str, corrections: str = "correct") -> CompleteStream:
    """The ``oracle`` stream: every test recording whole, labelled."""
    sp = spec(benchmark)
    if corrections not in CORRECTIONS:
        raise UserError(f"--corrections {corrections!r} is not one of {', '.join(CORRECTIONS.names())}")
    anns, cut_tax, test_path = D.read_test(root, sp.cut)
    videos = list(anns)
    segs = _segments(root, sp, videos, cut_tax)
    tax, extra = _taxonomy(root, sp, segs)
    ids = {n: i for i, n in tax.items()}
    recs = []
    for v in videos:
        ss = segs[v]
        steps = [ids[s.name] for s in ss]
        labels = [s.label for s in ss]
        _check_against_cut(sp, test_path, anns[v], v, steps, labels)
        recs.append(CompleteRecording(v, tuple(steps), tuple(int(x == "mistake") for x in labels), tuple(labels),
                                      tuple(s.kinds for s in ss),
                                      tuple(not (corrections == "exclude" and x == "correction") for x in labels),
                                      tuple(s.name for s in ss)))
    src = ", ".join(_source_files(sp))
    return CompleteStream(benchmark, "oracle", src, fingerprint(root, benchmark)["sources"], tuple(recs), tax,
                          extra, corrections)


def load_stream(root: str | os.PathLike, benchmark: str, stream: str, corrections: str = "correct",
                parsed: Mapping | None = None) -> CompleteStream:
    """``oracle`` or a predictions file (``parsed``: its :func:`.cut.parse_predictions`) over whole recordings."""
    base = annotated(root, benchmark, corrections)
    if stream == "oracle":
        return base
    path = Path(stream)
    seqs = parsed if parsed is not None else D.parse_predictions(path)
    missing = [r.video for r in base.recordings if r.video not in seqs]
    if missing:
        raise UserError(f"--stream {path}: {len(missing)} of the {len(base.recordings)} test recordings of "
                        f"{benchmark} are missing (first: {missing[0]!r}); a stream must cover every one, whole")
    recs = []
    for r in base.recordings:
        seq = D._step_ids(path, r.video, seqs[r.video], base.taxonomy)
        if len(seq) != len(r.steps):
            what = "shorter" if len(seq) < len(r.steps) else "longer"
            raise UserError(f"--stream {path}: video {r.video!r} has {len(seq)} steps, {what} than its annotated "
                            f"recording ({len(r.steps)} segments); a complete-trial stream gives one step per "
                            "annotated segment, in order")
        recs.append(CompleteRecording(r.video, tuple(seq), r.labels, r.source_labels, r.kinds, r.scored, r.names))
    extra = tuple(v for v in seqs if v not in {r.video for r in base.recordings})
    out = CompleteStream(benchmark, str(path), str(path), D.sha256_file(path), tuple(recs), base.taxonomy,
                         base.extra_steps, corrections, extra)
    if extra:
        out.notes.append(f"{len(extra)} video(s) of {path} are not test recordings and are not scored "
                         f"(first: {extra[0]!r})")
    return out


def training_errors(root: str | os.PathLike, benchmark: str) -> dict[str, int]:
    """Steps of the training recordings (their complete annotations) by label: what the monitors train on as
    correct although the sources mark them (module docstring)."""
    sp = spec(benchmark)
    videos = S.dtgl_videos(root, sp.dtgl_dir, "train")
    _, tax, _ = D.read_test(root, sp.cut)
    counts: dict[str, int] = {}
    for ss in _segments(root, sp, videos, tax).values():
        for s in ss:
            counts[s.label] = counts.get(s.label, 0) + 1
    return counts


def _source_files(sp: CompleteSpec) -> list[str]:
    return [f"{S.A101_DIR}/*.csv"] if sp.dtgl_dir == "assembly101" else [S.TENT_ACTIONS, S.TENT_ERRORS]


def fingerprint(root: str | os.PathLike, benchmark: str) -> dict[str, str]:
    """sha256 of DTGL's training and test files and of the source annotations read (the Assembly101 CSVs as one
    manifest of ``<name>.csv <sha256>`` lines, sorted): part of every output folder's identity."""
    sp = spec(benchmark)
    out = D.data_fingerprint(root, sp.cut)
    if sp.dtgl_dir == "assembly101":
        videos = sorted({*S.dtgl_videos(root, sp.dtgl_dir, "test"), *S.dtgl_videos(root, sp.dtgl_dir, "train")})
        lines = "".join(f"{v}.csv {D.sha256_file(S._file(root, f'{S.A101_DIR}/{v}.csv'))}\n" for v in videos)
        out["sources"] = hashlib.sha256(lines.encode()).hexdigest()
    else:
        h = hashlib.sha256()
        for rel in (S.TENT_ACTIONS, S.TENT_ERRORS):
            h.update(f"{rel} {D.sha256_file(S._file(root, rel))}\n".encode())
        out["sources"] = h.hexdigest()
    return out
