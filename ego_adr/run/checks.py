"""Everything a user can get wrong is checked before any work starts, and each mistake is one line that says what
to do (a :class:`~ego_adr.run.config.ConfigError`, exit 2).

Why up front: a wrong ``--device`` or an unwritable output folder used to surface minutes later as a 100-line
traceback from deep inside transformers or SQLite -- after the data were loaded and the model half built. These
checks are cheap (no model is loaded; torch is imported only when a CUDA device is named) and run in
:meth:`RunConfig.validate`, so the CLI, the ablation grid and library callers all get them.
"""

from __future__ import annotations

import os
import re
import types
import typing
from dataclasses import MISSING, fields

from ego_adr import store
from ego_adr.errors import UserError
from ego_adr.models import loading
from ego_adr.models.backends import BACKENDS
from ego_adr.run.errors import ConfigError

DTYPES = ("auto", "bfloat16", "bf16", "float16", "fp16", "float32", "fp32")


# ---- types of settings (YAML files) ---------------------------------------------------------------------------
def _expected(annotation) -> tuple[type, ...]:
    """The runtime types a field annotation accepts (``int | None`` -> (int, NoneType)); strings under
    ``from __future__ import annotations`` are evaluated against builtins."""
    if isinstance(annotation, str):
        annotation = eval(annotation, {"list": list, "dict": dict, "str": str, "int": int, "float": float,  # noqa: S307
                                       "bool": bool, "None": None})
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        out: tuple = ()
        for a in args:
            out += _expected(a)
        return out
    if annotation is None:
        return (type(None),)
    return (origin or annotation,)


def _type_name(types_: tuple) -> str:
    names = [{type(None): "null"}.get(t, getattr(t, "__name__", str(t))) for t in types_]
    return " or ".join(dict.fromkeys(names))


def check_types(values: dict, where: str, schema) -> None:
    """Every value has its field's type (an int where an int is expected, a list for ``sources``...); a YAML
    ``frames: eight`` stops here instead of as a TypeError in the middle of the run."""
    for f in fields(schema):
        if f.name not in values:
            continue
        v, ok = values[f.name], _expected(f.type)
        if float in ok and isinstance(v, int) and not isinstance(v, bool):
            continue
        if isinstance(v, bool) and bool not in ok:
            good = False
        else:
            good = isinstance(v, ok)
        if good and isinstance(v, list):
            good = all(isinstance(x, str) for x in v)
        if not good:
            default = f.default if f.default is not MISSING else None
            hint = f" (e.g. {f.name}: {default})" if default not in (None, MISSING) else ""
            raise ConfigError(f"{where}: setting {f.name!r} must be {_type_name(ok)}, got "
                              f"{type(v).__name__} {v!r}{hint}")


# ---- paths ----------------------------------------------------------------------------------------------------
def check_writable_dir(path: str | os.PathLike, flag: str) -> None:
    """:func:`ego_adr.store.check_writable_dir`, as a :class:`ConfigError`."""
    try:
        store.check_writable_dir(path, flag)
    except UserError as e:
        raise ConfigError(str(e)) from None


# ---- model, device, dtype, memory -----------------------------------------------------------------------------
def check_device(device: str, backend: str, spell: str = "--device {}") -> None:
    """:func:`ego_adr.models.loading.check_device`, as a :class:`ConfigError`."""
    try:
        loading.check_device(device, backend, spell)
    except UserError as e:
        raise ConfigError(str(e)) from None


def check_model_name(name: str | None, backend: str) -> None:
    """:func:`ego_adr.models.loading.check_model_name` (alias, folder or hub id), as a :class:`ConfigError`."""
    try:
        loading.check_model_name(name, backend)
    except UserError as e:
        raise ConfigError(str(e)) from None


_in_hub_cache = loading.in_hub_cache  # run/open_end checks its judges with it


def check_memory(gpu_memory: str | None) -> None:
    if gpu_memory is None:
        return
    from ego_adr.models.memory_planner import parse_memory

    try:
        if parse_memory(str(gpu_memory)) <= 0:
            raise ValueError
    except ValueError:
        raise ConfigError(f"--gpu-memory {gpu_memory!r} is not an amount of memory; write e.g. 24GB, 40GiB or "
                          "81920MB") from None


def check_environment(cfg) -> None:
    """All checks of one run's settings that need no model and no data (see the module docstring). The model
    name is checked by the runner (:func:`check_model_name`), unless the caller hands it a model object."""
    check_device(cfg.device, cfg.backend)
    if cfg.dtype is not None and cfg.dtype not in DTYPES:
        raise ConfigError(f"--dtype {cfg.dtype!r} is not a dtype; use one of {', '.join(DTYPES)}")
    check_memory(cfg.gpu_memory)
    if cfg.max_pixels_per_frame is not None and cfg.max_pixels_per_frame < 28 * 28:
        raise ConfigError("--max-pixels-per-frame must be at least 784 (one 28x28 patch)")
    if cfg.max_new_tokens < 1:
        raise ConfigError("--max-new-tokens must be >= 1 (the paper uses 256)")
    if cfg.prefetch < 0 or cfg.decode_workers < 1:
        raise ConfigError("--prefetch must be >= 0 and --decode-workers >= 1")
    if "base_url" in BACKENDS[cfg.backend].settings and cfg.base_url and not re.match(r"^https?://", cfg.base_url):
        raise ConfigError(f"--base-url {cfg.base_url!r} must start with http:// or https:// "
                          "(e.g. http://127.0.0.1:8000/v1)")
    if cfg.output_dir:
        check_writable_dir(cfg.output_dir, "--out")
    check_writable_dir(cfg.resolved_cache_dir(), "--cache-dir" if cfg.cache_dir else "the cache folder "
                       "($EGO_ADR_CACHE or ~/.cache/ego_adr; choose another with --cache-dir)")


def frames_note(cfg) -> str | None:
    """A note when ``--frames`` is not a multiple of the family's temporal patch (Qwen-VL: 2 frames per time
    step): the video processor repeats the last frame to fill the last pair, so the model sees fewer distinct
    time steps than frames asked for -- a run with 7 frames is really one of 8 with a duplicate."""
    if cfg.backend == "openai":
        return None
    try:
        from ego_adr.models.memory_planner import arch_for

        arch = arch_for(cfg.model or "tiny")
    except Exception:  # noqa: BLE001 -- an unknown architecture: nothing to say
        return None
    t = getattr(arch, "temporal_patch", 1) or 1
    if arch is None or t <= 1 or cfg.frames % t == 0:
        return None
    padded = -(-cfg.frames // t) * t
    return (f"--frames {cfg.frames} on {cfg.model or 'the demo model'}: its video encoder takes {t} frames per time "
            f"step, so the processor repeats the last frame to make {padded} ({padded // t} time steps); "
            f"use a multiple of {t} to get what you ask for")
