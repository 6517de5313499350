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
import shutil
from pathlib import Path

from ego_adr.build import llm, output, procedures, qa
from ego_adr.data.build_input import Row, read_label_map, read_rows
from ego_adr.errors import UserError
from ego_adr.reasoning.prompts import BUILD_PROCEDURE, BUILD_QA_CORRECT, BUILD_QA_ERROR

FORMAT = "ego_adr.build/1"
BATCH = 8


def _digest(path: str | Path | None) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else None


def identity(annotations, labels, given, fingerprint: str, config) -> dict:
    return {
        "format": FORMAT,
        "annotations": _digest(annotations),
        "labels": _digest(labels),
        "procedures": _digest(given),
        "model": fingerprint,
        "generation": config.key(),
        "prompts": {p.name: p.version for p in (BUILD_PROCEDURE, BUILD_QA_ERROR, BUILD_QA_CORRECT)},
    }


def _check_folder(out: Path, ident: dict, fresh: bool) -> None:
    info = out / "build" / "build.json"
    if fresh and out.exists():
        if not info.is_file() and any(out.iterdir()):
            raise UserError(f"--fresh: {out} is not a build folder; refusing to empty it")
        shutil.rmtree(out)
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


def _generate(model, segments, procs, fingerprint) -> list[dict]:
    out = []
    for i in range(0, len(segments), BATCH):
        chunk = segments[i : i + BATCH]
        reqs = [qa.request(row, procs[row.task], llm.GENERATION) for _, row in chunk]
        gens = model.generate(reqs)
        out += [qa.outcome(sid, row, g, fingerprint) for (sid, row), g in zip(chunk, gens, strict=True)]
    return out


def _write_state(out: Path, segments, generated, procs, issues, ident, model) -> None:
    bdir = out / "build"
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / "segments.jsonl").write_text(
        "".join(
            json.dumps({"sample_id": s, "row": dataclasses.asdict(r)}, ensure_ascii=False) + "\n"
            for s, r in segments
        ),
        encoding="utf-8",
    )
    (bdir / "generated.jsonl").write_text(
        "".join(json.dumps(g, ensure_ascii=False) + "\n" for g in generated), encoding="utf-8"
    )
    output.write_json(bdir / "procedures.json", {t: p.to_dict() for t, p in procs.items()})
    (bdir / "issues.txt").write_text("".join(i + "\n" for i in issues), encoding="utf-8")
    output.write_json(
        bdir / "build.json",
        {"identity": ident, "model_id": model.model_id, "model_fingerprint": model.fingerprint},
    )


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
) -> dict:
    """Build the data root ``out`` from an annotation file; returns the summary the CLI prints."""
    out = Path(out)
    mapping = read_label_map(labels)
    rows, bad = read_rows(annotations, mapping)
    rows, refused = _registered_without_native(rows)
    issues = (
        [str(b) for b in bad] + refused + [f"line {r.line}: warning: {r.warning}" for r in rows if r.warning]
    )
    if not rows:
        raise UserError(f"{annotations}: no usable row ({len(issues)} bad: {'; '.join(issues[:3])})")
    if (
        out.exists()
        and not (out / "build" / "build.json").is_file()
        and (out.is_file() or any(out.iterdir()))
    ):
        raise UserError(f"--out {out} exists and is not a build folder; name a new or empty folder")
    gen_model = llm.load_generator(model_name, device=device, cache_dir=cache_dir, model=model)
    ident = identity(annotations, labels, given_procedures, gen_model.fingerprint, llm.GENERATION)
    _check_folder(out, ident, fresh)
    procs, outage = procedures.condense(rows, gen_model, llm.GENERATION, read_given(given_procedures))
    if outage:
        from ego_adr.errors import InfrastructureError

        raise InfrastructureError(
            f"the model did not answer for the procedure of {', '.join(outage)}; nothing "
            "was written; rerun the same command"
        )
    out.mkdir(parents=True, exist_ok=True)
    by_source = output.write_multiple_choice(out, rows, {t: p.text for t, p in procs.items()})
    segments = output.sample_ids(out, by_source)
    generated = _generate(gen_model, segments, {t: p.text for t, p in procs.items()}, gen_model.fingerprint)
    _write_state(out, segments, generated, procs, issues, ident, gen_model)
    from ego_adr.build.final import finalise

    summary = finalise(out)
    summary.update(
        bad_rows=len(bad) + len(refused),
        issues=issues,
        rows=len(rows),
        procedures={m: sum(p.method == m for p in procs.values()) for m in ("given", "llm", "rule")},
        outages=sum(g["failure_kind"] == "infrastructure" for g in generated),
        unparseable=sum(g["failure_kind"] == "sample" for g in generated),
    )
    return summary
