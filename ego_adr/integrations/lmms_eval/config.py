"""The run settings of ``--model ego_adr`` and their checks, without importing lmms-eval.

Why apart from ``models/``: lmms-eval turns an exception in a model's constructor into a long traceback and still
exits 0 (issue 38 point 4: 29 lines, exit 0, no output, on a machine without CUDA). The same checks run here
before lmms-eval starts (``python -m ego_adr.integrations.lmms_eval --model_args ...``: one line, exit 2), and the
model's constructor ends the process with that line and exit code instead of handing lmms-eval a traceback.
"""

from __future__ import annotations

import os

from ego_adr.integrations.lmms_eval import docs as D

#: ``--model_args`` keys that ``--model ego_adr`` takes (the constructor's parameters).
MODEL_ARGS = ("pretrained", "mode", "backend", "device", "dtype", "cache_dir", "bank_model", "max_new_tokens",
              "gpu_memory", "batch_size", "max_batch_size")


def parse_model_args(text: str) -> dict[str, str]:
    """``a=1,b=x`` as lmms-eval reads ``--model_args`` (comma-separated ``key=value``)."""
    from ego_adr.errors import UserError

    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--model_args: {part!r} is not key=value (e.g. pretrained=qwen2.5-vl,device=cuda)")
        out[key.strip()] = value.strip()
    return out


def run_config(
    pretrained=None,
    mode="auto",
    backend="hf",
    device="auto",
    dtype=None,
    cache_dir=None,
    bank_model=None,
    max_new_tokens=None,
    gpu_memory=None,
    batch_size=1,
):
    """The :class:`~ego_adr.run.config.RunConfig` of the model, validated (a wrong value stops with one line; the
    device named as ``--model_args`` spell it, ``device=cuda``, not as our command lines do)."""
    from ego_adr.models.backends import BACKENDS
    from ego_adr.run.checks import check_device
    from ego_adr.run.config import RunConfig

    if str(backend) in BACKENDS:  # an unknown backend is validate()'s to name
        check_device(str(device), str(backend), spell="device={}")

    cfg = RunConfig(
        model=None if pretrained in (None, "", "tiny-demo") else str(pretrained),
        mode=str(mode),
        backend=str(backend),
        device=str(device),
        dtype=dtype,
        cache_dir=cache_dir,
        bank_model=bank_model,
        max_new_tokens=None if max_new_tokens is None else int(max_new_tokens),
        gpu_memory=gpu_memory,
        batch_size=int(batch_size),
        frames=D.frames(),
        protocol=D.PROTOCOL,
        protocol_options=dict(D.PROTOCOL_OPTIONS),
        data_root=os.environ.get(D.ENV_DATA) or None,
    )  # where the public source may lie beside it
    return cfg.validate()


def preflight(model_args: str):
    """Everything the constructor checks before it loads anything: the arguments, the device, the model name
    (an alias whose weights are not cached while offline, a folder that is not there). Raises a UserError."""
    from ego_adr.errors import UserError
    from ego_adr.run.checks import check_environment, check_model_name

    args = parse_model_args(model_args)
    unknown = sorted(set(args) - set(MODEL_ARGS))
    if unknown:
        raise UserError(f"--model ego_adr: unknown model_args {unknown}; known: {', '.join(MODEL_ARGS)}")
    args.pop("max_batch_size", None)
    cfg = run_config(**args)
    check_environment(cfg)
    check_model_name(cfg.model, cfg.backend)
    return cfg
