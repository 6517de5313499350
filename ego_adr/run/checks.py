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
from pathlib import Path

from ego_adr.run.errors import ConfigError

DTYPES = ("auto", "bfloat16", "bf16", "float16", "fp16", "float32", "fp32")
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


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
    """``path`` is (or can be created as) a folder this process can write into. Tried for real with a probe file:
    permission bits lie for root and on read-only mounts."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{flag} {path} is a file, not a folder; pick a folder path")
    probe_dir = p
    while not probe_dir.exists():
        if probe_dir.parent == probe_dir:
            break
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise ConfigError(f"{flag} {path}: {probe_dir} is a file, not a folder; pick a folder path")
    try:
        fd, name = _probe_file(probe_dir)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise ConfigError(f"{flag} {path} is not writable ({e.strerror or e}); choose a folder you can write "
                          "to") from None


def _probe_file(folder: Path) -> tuple[int, str]:
    import tempfile

    return tempfile.mkstemp(prefix=".ego_adr_write_check_", dir=folder)


# ---- model, device, dtype, memory -----------------------------------------------------------------------------
def check_device(device: str, backend: str) -> None:
    if not _DEVICE_RE.match(device or ""):
        raise ConfigError(f"--device {device!r} is not a device; use auto, cpu, cuda or cuda:N (e.g. cuda:0)")
    if device.startswith("cuda") and backend in ("hf", "vllm"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"--device {device} asked for, but this machine has no usable CUDA GPU; use --device "
                              "cpu (or auto)")
        if ":" in device and int(device.split(":")[1]) >= torch.cuda.device_count():
            raise ConfigError(f"--device {device}: this machine has {torch.cuda.device_count()} GPU(s) "
                              f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")


def check_model_name(name: str | None, backend: str) -> None:
    """An alias, an existing folder, or a hub id (offline: one present in the local hub cache). Any name is fine
    for ``--backend openai``: the server decides what it serves."""
    if name is None or backend == "openai":
        return
    from ego_adr.models.registry import ALIASES

    key = name.strip()
    if key.lower() in ALIASES:
        spec = ALIASES[key.lower()]
        if not spec.tiny and _offline() and not _in_hub_cache(spec.hub_id):  # tiny: built offline
            raise ConfigError(f"--model {name} ({spec.hub_id}) is not in the local Hugging Face cache and the hub is "
                              "offline (HF_HUB_OFFLINE); download it with network access or use --model tiny")
        return
    p = Path(os.path.expanduser(key))
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ConfigError(f"--model {name} is a folder without config.json: not a Hugging Face model folder")
        return
    looks_like_path = key.startswith((".", "/", "~")) or key.count("/") > 1  # a hub id is org/name
    if looks_like_path or p.exists():
        raise ConfigError(f"--model {name}: no such model folder")
    if "/" not in key:
        known = ", ".join(sorted(ALIASES))
        raise ConfigError(f"--model {name!r} is not a known alias ({known}), a model folder or a hub id (org/name)")
    if _offline() and not _in_hub_cache(key):
        raise ConfigError(f"--model {name} is not in the local Hugging Face cache and the hub is offline "
                          "(HF_HUB_OFFLINE); download it with network access or pass a local folder")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return True
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # noqa: BLE001 -- a malformed id: the loader will say so
        return False


def check_memory(gpu_memory: str | None) -> None:
    if gpu_memory is None:
        return
    from ego_adr.models.planner import parse_memory

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
    if cfg.backend == "openai" and cfg.base_url and not re.match(r"^https?://", cfg.base_url):
        raise ConfigError(f"--base-url {cfg.base_url!r} must start with http:// or https:// "
                          "(e.g. http://127.0.0.1:8000/v1)")
    if cfg.output_dir:
        check_writable_dir(cfg.output_dir, "--output-dir")
    check_writable_dir(cfg.resolved_cache_dir(), "--cache-dir" if cfg.cache_dir else "the cache folder "
                       "($EGO_ADR_CACHE or ~/.cache/ego_adr; choose another with --cache-dir)")


def frames_note(cfg) -> str | None:
    """A note when ``--frames`` is not a multiple of the family's temporal patch (Qwen-VL: 2 frames per time
    step): the video processor repeats the last frame to fill the last pair, so the model sees fewer distinct
    time steps than frames asked for -- a run with 7 frames is really one of 8 with a duplicate."""
    if cfg.backend == "openai":
        return None
    try:
        from ego_adr.models.planner import arch_for

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
