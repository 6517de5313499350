"""``build``: annotation rows -> a data root (procedures, multiple-choice samples, LLM-written QA pairs, card).

A folder holds one build: its identity (annotation, label-mapping and procedure files' digests, the model's
fingerprint, the generation settings and prompt versions) is kept in ``build/build.json``; building again with the
same identity redoes nothing the stage cache holds and keeps every review decision, another identity refuses
unless ``fresh``. Segments whose generation failed for infrastructure reasons get no pair and make the build end
with exit 3: rerunning the same command asks only for them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ego_adr.benchmark_builder import labelling, llm, output, procedures, qa
from ego_adr.benchmark_builder.subsample import subsample as draw
from ego_adr.data.build_input import Row, read_label_map, read_rows
from ego_adr.errors import InfrastructureError, UserError
from ego_adr.reasoning.prompts import (
    BUILD_LABEL,
    BUILD_PROCEDURE,
    BUILD_QA_CORRECT,
    BUILD_QA_CORRECT_MISLEADING,
    BUILD_QA_ERROR,
)

FORMAT = "ego_adr.build/1"
BATCH = 8


@dataclass(frozen=True)
class Options:
    """The build's choices beside the model and files, all part of its identity and named in the card.

    ``llm_labels``: the LLM types the rows whose labels are neither options nor mapped (Section 3.3; off: such a
    row is a bad row). ``llm_misleading``: the LLM writes misleading questions about correct steps (a deviation:
    in the paper the final annotator does, Section 3.3). ``subsample``: keep this many segments, proportionally
    per source and correct/error (Section 3.1), drawn with ``subsample_seed``."""

    llm_labels: bool = True
    llm_misleading: bool = False
    subsample: int | None = None
    subsample_seed: int = 0

    def key(self) -> dict:
        d = asdict(self)
        if self.subsample is None:
            d["subsample_seed"] = None
        return d


def _digest(path: str | Path | None) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else None


def prompts_used(options: Options) -> tuple:
    correct = BUILD_QA_CORRECT_MISLEADING if options.llm_misleading else BUILD_QA_CORRECT
    return (BUILD_PROCEDURE, BUILD_QA_ERROR, correct) + ((BUILD_LABEL,) if options.llm_labels else ())


def identity(annotations, labels, given, fingerprint: str, config, options: Options | None = None) -> dict:
    options = options or Options()
    return {
        "format": FORMAT,
        "annotations": _digest(annotations),
        "labels": _digest(labels),
        "procedures": _digest(given),
        "model": fingerprint,
        "generation": config.key(),
        "prompts": {p.name: p.version for p in prompts_used(options)},
        "options": options.key(),
    }


def build_files(out: Path) -> tuple[str, ...]:
    """What a build (and its review and merge) writes in ``out``: what ``--fresh`` removes, nothing else a user
    keeps there. The sources' files are the ones its ``sources.json`` names."""
    from ego_adr.data.sources import built

    try:
        names = [e["name"] for e in json.loads((out / built.MANIFEST).read_text(encoding="utf-8"))["sources"]]
    except (OSError, ValueError, KeyError, TypeError):
        names = []
    own = [f for n in names for f in output.files_of(n).values()]
    return ("build", "review", "procedure.json", built.MANIFEST, "README.md", *own)


def _check_folder(out: Path, ident: dict, fresh: bool) -> None:
    info = out / "build" / "build.json"
    if fresh and out.exists():
        if not info.is_file() and any(out.iterdir()):
            raise UserError(f"--fresh: {out} is not a build folder (no build/build.json); nothing was removed")
        from ego_adr.folders import discard, said_removed

        said_removed(out, discard(out, build_files(out)))
        return  # the build's own files are gone; what a user keeps beside them stays, and the build goes on
    if info.is_file():
        old = json.loads(info.read_text(encoding="utf-8")).get("identity", {})
        diff = [k for k in ident if old.get(k) != ident[k]]
        if diff:
            raise UserError(
                f"{out} holds a build with other settings ({', '.join(diff)} differ); use another "
                "--out, or --fresh to start over (review decisions there are lost)"
            )
    elif out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out} exists and is not a build folder; name a new or empty folder")


def _registered_without_native(rows: list[Row]) -> tuple[list[Row], list[str]]:
    good, bad = [], []
    for r in rows:
        if output.is_registered(r.source) and not r.native:
            bad.append(
                f"line {r.line}: source {r.source!r} is a dataset with its own record format: its rows need "
                "the dataset's own fields (native, as `ego_adr.data convert` writes them); or name your "
                "source differently"
            )
        else:
            good.append(r)
    return good, bad


def read_given(path) -> dict[str, str]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"cannot read --procedures {path} ({e})") from None
    if not isinstance(data, dict):
        raise UserError(f"--procedures {path} must map task_id to procedure text (procedure.json format)")
    return {str(k): str(v) for k, v in data.items()}


def _generate(model, segments, procs, fingerprint, misleading: bool) -> list[dict]:
    out = []
    for i in range(0, len(segments), BATCH):
        chunk = segments[i : i + BATCH]
        reqs = [qa.request(row, procs[row.task], llm.GENERATION, misleading) for _, row in chunk]
        gens = model.generate(reqs)
        out += [
            qa.outcome(sid, row, g, fingerprint, misleading) for (sid, row), g in zip(chunk, gens, strict=True)
        ]
    return out


def _jsonl(path: Path, records) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def _write_state(out: Path, segments, generated, procs, issues, ident, model, labelled, drawn) -> None:
    bdir = out / "build"
    bdir.mkdir(parents=True, exist_ok=True)
    _jsonl(bdir / "segments.jsonl", ({"sample_id": s, "row": dataclasses.asdict(r)} for s, r in segments))
    _jsonl(bdir / "generated.jsonl", generated)
    _jsonl(bdir / "labels.jsonl", labelled)
    output.write_json(bdir / "procedures.json", {t: p.to_dict() for t, p in procs.items()})
    (bdir / "issues.txt").write_text("".join(i + "\n" for i in issues), encoding="utf-8")
    sub = bdir / "subsample.json"
    if drawn is not None:
        output.write_json(sub, drawn)
    elif sub.exists():
        sub.unlink()
    output.write_json(
        bdir / "build.json",
        {"identity": ident, "model_id": model.model_id, "model_fingerprint": model.fingerprint},
    )


def _read_input(annotations, labels, options: Options) -> tuple[list[Row], list[str], int, dict | None]:
    """(the usable rows, after the subsample; the issue lines; the bad-row count; the draw's record)."""
    mapping = read_label_map(labels)
    rows, bad = read_rows(annotations, mapping, pending=options.llm_labels)
    rows, refused = _registered_without_native(rows)
    issues = (
        [str(b) for b in bad] + refused + [f"line {r.line}: warning: {r.warning}" for r in rows if r.warning]
    )
    if not rows:
        shown = "; ".join(issues[:3]) + (f"; ... and {len(issues) - 3} more" if len(issues) > 3 else "")
        raise UserError(f"{annotations}: no usable row ({len(issues)} bad: {shown})")
    drawn = None
    if options.subsample is not None:
        rows, drawn = draw(rows, options.subsample, options.subsample_seed)
    return rows, issues, len(bad) + len(refused), drawn


def _ask_first(rows, gen_model, given, options: Options) -> tuple[list[Row], list[dict], dict]:
    """The calls that come before anything is written: the labelling pass, then the procedures. An outage in
    either stops the build with nothing written (the stage cache keeps every call that answered)."""
    labelled: list[dict] = []
    if options.llm_labels:
        rows, labelled, outage = labelling.label_rows(
            rows, gen_model, llm.LABEL_GENERATION, gen_model.fingerprint
        )
        if outage:
            raise InfrastructureError(
                f"the model did not answer for the labels of {len(outage)} rows ({outage[0]}); nothing was "
                "written; rerun the same command"
            )
        if not rows:
            raise UserError("no row left: the LLM named no error type for any row that needed one (build/)")
    procs, outage = procedures.condense(rows, gen_model, llm.GENERATION, read_given(given))
    if outage:
        raise InfrastructureError(
            f"the model did not answer for the procedure of {', '.join(outage)}; nothing "
            "was written; rerun the same command"
        )
    return rows, labelled, procs


def build(
    annotations,
    out,
    model_name: str | None = None,
    labels=None,
    given_procedures=None,
    cache_dir=None,
    device=None,
    fresh: bool = False,
    model=None,
    options: Options | None = None,
) -> dict:
    """Build the data root ``out`` from an annotation file; returns the summary the CLI prints."""
    out, options = Path(out), options or Options()
    rows, issues, n_bad, drawn = _read_input(annotations, labels, options)
    if (
        out.exists()
        and not (out / "build" / "build.json").is_file()
        and (out.is_file() or any(out.iterdir()))
    ):
        raise UserError(f"--out {out} exists and is not a build folder; name a new or empty folder")
    gen_model = llm.load_generator(model_name, device=device, cache_dir=cache_dir, model=model)
    ident = identity(annotations, labels, given_procedures, gen_model.fingerprint, llm.GENERATION, options)
    _check_folder(out, ident, fresh)
    rows, labelled, procs = _ask_first(rows, gen_model, given_procedures, options)
    issues += labelling.issue_lines(labelled)
    out.mkdir(parents=True, exist_ok=True)
    texts = {t: p.text for t, p in procs.items()}
    by_source = output.write_multiple_choice(out, rows, texts)
    segments = output.sample_ids(out, by_source)
    generated = _generate(gen_model, segments, texts, gen_model.fingerprint, options.llm_misleading)
    _write_state(out, segments, generated, procs, issues, ident, gen_model, labelled, drawn)
    from ego_adr.benchmark_builder.final import finalise

    summary = finalise(out)
    summary.update(
        bad_rows=n_bad,
        issues=issues,
        rows=len(rows),
        procedures={m: sum(p.method == m for p in procs.values()) for m in ("given", "llm", "rule")},
        outages=sum(g["failure_kind"] == "infrastructure" for g in generated),
        unparseable=sum(g["failure_kind"] == "sample" for g in generated),
        label_failures=sum(r["failure_kind"] == "sample" for r in labelled),
        subsample=None if drawn is None else {k: drawn[k] for k in ("rows", "kept", "seed")},
        calls=gen_model.stats(),
    )
    return summary
