"""Sources of a built benchmark (``python -m ego_adr.data build``): declared by the data root itself.

Why: a lab that builds its own EgoErrorVQA from its own recordings must get a data root that ``ego_adr.run``,
``eval score``, the green agent and the lmms-eval task read with no code change. The build writes a manifest,
``sources.json``, beside ``procedure.json``; :func:`discover` reads it and registers one :class:`SourceSpec` per
declared source, so everything that asks the source registry (``--sources``, the default sources of a data root,
the reports' labels) sees it.

Manifest::

    {"format": "ego_adr.built/1",
     "sources": [{"name": "mykitchen", "reader": "built", "label": "My kitchen",
                  "files": {"multiple-choice": "mykitchen_answer.json", "open-end": "mykitchen_qa_pairs.json"},
                  "video_layout": "{source}/{video_id}.mp4"},
                 {"name": "captaincook4d", "reader": "registered"}]}

``reader: built`` sources use the generic record below; ``reader: registered`` names a source the registry already
has (the four public ones: a rebuilt release keeps their files and native fields, so their own loaders read it).

Generic record (one per sample): ``video_id``, ``task_id``, ``start_time``, ``end_time`` (seconds; ``-1`` both =
the whole video), ``action_annotation`` (the step), ``step_id`` (optional), ``is_error``, ``error_description``,
``video`` (optional: the video's path under the video root, else ``video_layout``), and ``close_end_answer``
(multiple choice: a list of option strings) or ``qa_pairs`` (open-ended).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ego_adr.data.sources.spec import Extracted, SourceSpec, is_correct_flag, text, video_id_of

MANIFEST = "sources.json"
FORMAT = "ego_adr.built/1"
DEFAULT_LAYOUT = "{source}/{video_id}.mp4"


class ManifestError(ValueError):
    """A data root's ``sources.json`` cannot be used; the message names the file and what is wrong."""


def files_for(name: str) -> dict[str, str]:
    return {"multiple-choice": f"{name}_answer.json", "open-end": f"{name}_qa_pairs.json"}


def step_key(action: str | None, step_id) -> str:
    """The step part of a generic record's sample id: its ``step_id`` when it has one, else a hash of the step."""
    sid = text(step_id)
    if sid:
        return f"step{sid}"
    return "step-" + hashlib.sha1((action or "").encode()).hexdigest()[:6]


def extract(record: dict, context=None) -> Extracted:
    action = text(record.get("action_annotation"))
    return Extracted(
        action=action,
        action_field="action_annotation" if action else "none",
        reference=text(record.get("error_description")),
        is_correct=is_correct_flag(record),
        id_parts=(step_key(action, record.get("step_id")),),
    )


def _video_path(name: str, layout: str):
    def video_path(root: Path, record: dict) -> str:
        own = text(record.get("video"))
        if own:
            return str(root / own)
        fields = {
            "source": name,
            "video_id": video_id_of(record),
            "task_id": text(record.get("task_id")) or "",
        }
        return str(root / layout.format(**fields))

    return video_path


def spec_for(entry: dict, manifest: Path) -> SourceSpec:
    """The spec of one ``reader: built`` manifest entry."""
    name = text(entry.get("name"))
    if not name:
        raise ManifestError(f"{manifest}: a source entry has no name: {entry!r}")
    layout = text(entry.get("video_layout")) or DEFAULT_LAYOUT
    try:
        layout.format(source="s", video_id="v", task_id="t")
    except (KeyError, IndexError, ValueError) as e:
        raise ManifestError(
            f"{manifest}: video_layout {layout!r} of {name!r} may use only {{source}}, "
            f"{{video_id}}, {{task_id}} ({e})"
        ) from None
    files = entry.get("files") or files_for(name)
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ManifestError(f"{manifest}: files of {name!r} must map a task to a file name")
    return SourceSpec(
        name=name,
        files=dict(files),
        video_path=_video_path(name, layout),
        extract=extract,
        label=text(entry.get("label")) or name,
        public=False,
        description=text(entry.get("description")) or f"built with ego_adr.data build ({manifest.parent})",
        layout=layout,
        extras={"built": True, "manifest": str(manifest)},
    )


def read_manifest(data_root: str | os.PathLike) -> list[dict] | None:
    """The manifest's source entries, or None when the data root has no manifest."""
    path = Path(data_root).expanduser() / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ManifestError(f"cannot read {path} ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list) or not data["sources"]:
        raise ManifestError(
            f"{path}: expected {{'format': {FORMAT!r}, 'sources': [...]}} with at least one source"
        )
    if data.get("format") != FORMAT:
        raise ManifestError(f"{path}: format {data.get('format')!r} is not {FORMAT!r}; rebuild the data root")
    return [e if isinstance(e, dict) else {"name": e, "reader": "registered"} for e in data["sources"]]


def discover(data_root: str | os.PathLike | None) -> tuple[str, ...] | None:
    """Register the sources a data root declares and return their names in manifest order (None: no manifest).

    A ``built`` source may not take the name of a source registered by code (a built one of the same name, from
    another data root, is replaced: the latest data root read wins)."""
    from ego_adr.data import sources as registry  # the registry package imports this module

    if not data_root:
        return None
    entries = read_manifest(data_root)
    if entries is None:
        return None
    manifest = Path(data_root).expanduser() / MANIFEST
    names: list[str] = []
    for entry in entries:
        reader = entry.get("reader", "built")
        if reader == "registered":
            try:
                names.append(registry.get(str(entry.get("name"))).name)
            except KeyError as e:
                raise ManifestError(f"{manifest}: {e.args[0]}") from None
            continue
        if reader != "built":
            raise ManifestError(
                f"{manifest}: reader {reader!r} of {entry.get('name')!r} is not built|registered"
            )
        spec = spec_for(entry, manifest)
        owner = registry.SOURCES.get(spec.name)
        if owner is not None and not owner.extras.get("built"):
            raise ManifestError(
                f"{manifest}: source {spec.name!r} is a registered dataset with its own record "
                "format; a built source needs another name"
            )
        registry.register(spec, replace=True)
        names.append(spec.name)
    return tuple(dict.fromkeys(names))
