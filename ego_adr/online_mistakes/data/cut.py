"""Reading Assembly101-O and EPIC-Tent-O from a data root laid out as ``../shared/online-mistakes/`` (what
``python -m ego_adr.monitoring download`` writes): DTGL's ``train.json`` / ``test.json`` and PREGO's predictions.

The streams of one benchmark (each a list of recordings, each the step ids observed in order):

- ``oracle``: the segments of DTGL's ``test.json`` (the ground-truth steps, consecutive repeats kept; DTGL's ``*``);
- ``oracle-merged``: PREGO's ``gt`` (the same steps with consecutive repeats merged; TI-PREGO's "oracle");
- ``miniroad``: PREGO's ``pred`` (the MiniRoad online step recogniser's output; DTGL's ``+``);
- any file in PREGO's predictions format, ``{video: {"pred": [step ids...]}}`` (``--stream FILE``): a recogniser's
  output on the test recordings.

The label follows the benchmarks' protocol (PREGO Sec. 4, DTGL Sec. 4.3): every test recording is cut at its first
mistake, so the last step of each sequence is the mistake (label 1) and every other step is correct (label 0).
In PREGO's format the label is positional, so any non-empty ``pred`` has its mistake; a video whose ``pred`` is
missing or not a list has no recognised steps and so no mistake step to score, and is refused like an empty one.

Video keys of a predictions file are matched against the test set: a test video the file lacks is refused (the
scores would not be the benchmark's) unless ``--partial`` says the file covers only some test videos (then the
covered ones are scored, the others listed as ``unscored``, and ``coverage`` says how many of how many); a video
the file has beyond the test set is left out of the scores and listed in ``metrics.json`` (a recogniser run on
more recordings than the test set is still usable). A key twice in one JSON object is refused (JSON parsers keep
one of the two silently: which sequence would be scored is then up to the parser).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.online_mistakes.types import TrainingSet
from ego_adr.registry import Registry

#: The streams every cut benchmark has (name -> what it is); ``--stream`` also takes a file in PREGO's format.
STREAMS: Registry[str] = Registry("stream", {
    "oracle": "the segments of DTGL's test.json, consecutive repeats kept (DTGL's *)",
    "oracle-merged": "PREGO's gt: the same steps, consecutive repeats merged (TI-PREGO's oracle)",
    "miniroad": "PREGO's pred: the MiniRoad online step recogniser's output (DTGL's +)"}, describe=str)
DOWNLOAD_HINT = "get the files with `python -m ego_adr.monitoring download --out DIR` and pass --data-root DIR"


@dataclass(frozen=True)
class CutSpec:
    name: str
    dtgl_dir: str  # dtgl/<dir>/{train,test}.json
    scenario: str  # the key of DTGL's taxonomy and of each annotation's "scenario"
    predictions: str  # prego/predictions/<file>
    title: str

    def files(self) -> dict[str, str]:
        """The files this benchmark reads, relative to the data root."""
        return {"train": f"dtgl/{self.dtgl_dir}/train.json", "test": f"dtgl/{self.dtgl_dir}/test.json",
                "predictions": f"prego/predictions/{self.predictions}"}


#: The cut benchmarks' data: where each one's files are under the data root (one line per benchmark).
BENCHMARKS: Registry[CutSpec] = Registry("cut benchmark", (
    CutSpec("assembly101-o", "assembly101", "assembly101", "output_miniROAD_Assembly101-O.json", "Assembly101-O"),
    CutSpec("epic-tent-o", "epic-tent", "epic-tent", "output_miniROAD_Epic-tent-O.json", "EPIC-Tent-O"),
), describe=lambda sp: sp.title)


@dataclass(frozen=True)
class Recording:
    video: str
    steps: tuple[int, ...]

    @property
    def labels(self) -> tuple[int, ...]:
        return (0,) * (len(self.steps) - 1) + (1,)


@dataclass(frozen=True)
class Stream:
    """The recordings of one stream of one benchmark, and where they came from."""

    benchmark: str
    name: str  # oracle, oracle-merged, miniroad, or the file's path
    source: str
    sha256: str
    recordings: tuple[Recording, ...]
    extra_videos: tuple[str, ...] = ()  # in the file, not in the test set: not scored
    notes: list[str] = field(default_factory=list)
    unscored: tuple[str, ...] = ()  # test videos a partial file does not cover (--partial): not scored
    benchmark_videos: int | None = None  # the test set's size (None: the recordings are all of it)

    @property
    def coverage(self) -> dict[str, int]:
        """How many of the benchmark's test videos this stream scores."""
        n = len(self.recordings)
        return {"scored": n, "benchmark": self.benchmark_videos or n}


def spec(benchmark: str) -> CutSpec:
    if benchmark not in BENCHMARKS:
        raise UserError(f"--benchmark {benchmark!r} is not one of {', '.join(BENCHMARKS.names())}")
    return BENCHMARKS[benchmark]


def sha256_file(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def read_json(path: str | os.PathLike, what: str):
    """The JSON in ``path``; a missing, empty, binary or malformed file is one :class:`UserError` naming it."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{what} {p} not found{'' if what.startswith('--') else '; ' + DOWNLOAD_HINT}")
    raw = p.read_bytes()
    if not raw.strip():
        raise UserError(f"{what} {p} is empty; it should hold a JSON object")
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise UserError(f"{what} {p} holds the key {e.args[0]!r} twice in one object; keep one entry per key "
                        "(a JSON parser would silently keep only one of them)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        where = f" (line {e.lineno} column {e.colno})" if isinstance(e, json.JSONDecodeError) else ""
        raise UserError(f"{what} {p} is not JSON{where}; it should hold a JSON object") from None


def _path(root: str | os.PathLike, rel: str) -> Path:
    p = Path(root).expanduser() / rel
    if not p.is_file():
        raise UserError(f"--data-root {root}: {rel} not found (a data root that `python -m ego_adr.monitoring "
                        f"download` wrote holds it); {DOWNLOAD_HINT}")
    return p


def taxonomy(doc: Mapping, sp: CutSpec, path: Path) -> dict[int, str]:
    try:
        return {int(k): str(v["name"]) for k, v in doc["taxonomy"][sp.scenario].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise UserError(f"{path} has no taxonomy for {sp.scenario!r} (taxonomy.{sp.scenario}.<id>.name); is it "
                        f"DTGL's {sp.dtgl_dir} file?") from None


def _annotations(path: Path, sp: CutSpec) -> tuple[dict[str, list[dict]], dict[int, str]]:
    """DTGL's ``annotations``: video -> its segments, and the taxonomy, checked for shape."""
    doc = read_json(path, "data file")
    if not isinstance(doc, dict) or not isinstance(doc.get("annotations"), dict):
        raise UserError(f"{path} is not a DTGL annotation file (a JSON object with 'annotations' and 'taxonomy')")
    tax = taxonomy(doc, sp, path)
    out = {}
    for video, ann in doc["annotations"].items():
        segs = ann.get("segments") if isinstance(ann, dict) else None
        if not isinstance(segs, list) or not all(isinstance(s, dict) and "step_id" in s for s in segs):
            raise UserError(f"{path}: annotation {video!r} has no list of segments with step_id")
        out[video] = segs
    return out, tax


def load_training(root: str | os.PathLike, benchmark: str) -> TrainingSet:
    """The correct training sequences (DTGL's ``train.json``) and the taxonomy."""
    sp = spec(benchmark)
    path = _path(root, sp.files()["train"])
    anns, tax = _annotations(path, sp)
    seqs = {v: tuple(_step_ids(path, v, [s["step_id"] for s in segs], tax)) for v, segs in anns.items()}
    return TrainingSet(benchmark, tuple(seqs.values()), tax, tuple(seqs))


def read_test(root: str | os.PathLike, benchmark: str) -> tuple[dict[str, list[dict]], dict[int, str], Path]:
    sp = spec(benchmark)
    path = _path(root, sp.files()["test"])
    anns, tax = _annotations(path, sp)
    return anns, tax, path


def _step_ids(path, video: str, steps, tax: Mapping[int, str]) -> list[int]:
    """Steps as ints the taxonomy knows; anything else is a one-line refusal naming the file and the video."""
    out = []
    for i, s in enumerate(steps):
        if isinstance(s, bool) or not isinstance(s, int):
            raise UserError(f"{path}: video {video!r} step {i} is {json.dumps(s)}, not an integer step id")
        if s not in tax:
            raise UserError(f"{path}: video {video!r} step {i} has step id {s}, which the taxonomy does not know "
                            f"(ids {min(tax)}-{max(tax)})")
        out.append(s)
    return out


def _oracle(root, benchmark: str) -> Stream:
    anns, tax, path = read_test(root, benchmark)
    recs = []
    for video, segs in anns.items():
        if not segs:
            raise UserError(f"{path}: video {video!r} has an empty sequence (a test recording ends with its mistake)")
        flags = [bool(s.get("has_errors")) for s in segs]
        if not flags[-1] or any(flags[:-1]):
            raise UserError(f"{path}: video {video!r} is a sequence without a mistake at its end (the last segment "
                            "must be the only one with has_errors true): not a test file of the benchmark")
        recs.append(Recording(video, tuple(_step_ids(path, video, [s["step_id"] for s in segs], tax))))
    return Stream(benchmark, "oracle", str(path), sha256_file(path), tuple(recs))


def parse_predictions(path: str | os.PathLike, field_name: str = "pred", what: str = "--stream") -> dict[str, list]:
    """PREGO's predictions format ``{video: {"pred": [...], "gt": [...]}}``, checked for shape only (the step ids
    are checked against the taxonomy once the data root is read): ``{video: [step, ...]}`` of ``field_name``."""
    doc = read_json(path, what)
    if not isinstance(doc, dict) or not doc:
        raise UserError(f"{what} {path} is not in PREGO's predictions format: a JSON object "
                        '{"<video>": {"pred": [step ids ...]}, ...} with at least one video')
    out = {}
    for video, entry in doc.items():
        seq = entry.get(field_name) if isinstance(entry, dict) else None
        if not isinstance(seq, list):
            raise UserError(f"{what} {path}: video {video!r} has no {field_name!r} list of step ids, so no recognised "
                            "steps and no mistake step to score (PREGO's format: the last step is the mistake)")
        if not seq:
            raise UserError(f"{what} {path}: video {video!r} has an empty sequence (the last step of each sequence "
                            "is its mistake; an empty one has none)")
        out[video] = seq
    return out


def _from_predictions(root, benchmark: str, name: str, path: Path, seqs: Mapping[str, list],
                      partial: bool = False) -> Stream:
    anns, tax, test_path = read_test(root, benchmark)
    missing = tuple(v for v in anns if v not in seqs)
    if missing and not partial:
        raise UserError(f"--stream {path}: {len(missing)} of the {len(anns)} test videos of {benchmark} are missing "
                        f"(first: {missing[0]!r}); a stream must cover every video of {test_path}, or pass "
                        f"--partial to score only the {len(anns) - len(missing)} it covers")
    if len(missing) == len(anns):
        raise UserError(f"--stream {path} covers none of the {len(anns)} test videos of {benchmark} (its first "
                        f"video: {next(iter(seqs))!r}; the test videos are named like {next(iter(anns))!r}): "
                        "nothing to score")
    extra = tuple(v for v in seqs if v not in anns)
    recs = tuple(Recording(v, tuple(_step_ids(path, v, seqs[v], tax))) for v in anns if v in seqs)  # test order
    s = Stream(benchmark, name, str(path), sha256_file(path), recs, extra, unscored=missing,
               benchmark_videos=len(anns))
    if missing:
        s.notes.append(f"--partial: {len(recs)} of {len(anns)} test videos scored; the {len(missing)} the file "
                       f"does not cover are not scored (listed in metrics.json, first: {missing[0]!r})")
    if extra:
        s.notes.append(f"{len(extra)} video(s) of {path} are not in the test set and are not scored "
                       f"(first: {extra[0]!r})")
    return s


def load_stream(root: str | os.PathLike, benchmark: str, stream: str, parsed: Mapping | None = None,
                partial: bool = False) -> Stream:
    """One stream of ``benchmark``: a name of :data:`STREAMS`, or a predictions file (``parsed``: its
    :func:`parse_predictions`, when the caller checked it before reading the data root; ``partial``: it may cover
    only some test videos)."""
    sp = spec(benchmark)
    if stream == "oracle":
        return _oracle(root, benchmark)
    if stream in ("oracle-merged", "miniroad"):
        path = _path(root, sp.files()["predictions"])
        key = "gt" if stream == "oracle-merged" else "pred"
        return _from_predictions(root, benchmark, stream, path, parse_predictions(path, key, "data file"))
    path = Path(stream)
    return _from_predictions(root, benchmark, str(path), path, parsed or parse_predictions(path), partial)


def data_fingerprint(root: str | os.PathLike, benchmark: str) -> dict[str, str]:
    """sha256 of the training and test files: part of every output folder's identity."""
    sp = spec(benchmark)
    return {k: sha256_file(_path(root, rel)) for k, rel in sp.files().items() if k != "predictions"}
