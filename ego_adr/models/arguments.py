"""The model arguments every command that takes a model declares the same way: ``--model``, ``--backend``,
``--base-url``, ``--device`` (and ``--dtype`` where a command loads weights itself).

Why one function: ``--model`` was declared in ten command lines and ``--backend`` hard-coded in several (one took
``hf, vllm, openai`` as a fixed list, another any string), so a plugin backend reached some commands and not
others, and the same flag had four help texts (issue 37 item 4). :func:`add_model_arguments` gives each the same
help, the backend registry's choices (plugins included, :mod:`ego_adr.models.backends`) and a device that is
checked when parsed (a wrong spelling is one ``error:`` line, exit 2); what differs per command is stated by its
arguments (its default model, whether the model is required, which backends it can serve through).
:func:`check_model_arguments` is the check before any work: a CUDA device this machine lacks, a model name that
is neither an alias, a folder nor a hub id (:mod:`ego_adr.models.loading`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from ego_adr.models.backends import REGISTRY as BACKEND_REGISTRY
from ego_adr.models.families import TINY, model_help
from ego_adr.models.loading import _DEVICE_RE, check_device, check_model_name

DEVICE_HELP = "auto, cpu, mps, cuda or cuda:N"
BASE_URL_HELP = ("--backend openai: the OpenAI-compatible server's URL, e.g. http://127.0.0.1:8000/v1 (python -m "
                 "ego_adr.models.serve serves ours; the key comes from OPENAI_API_KEY)")


def device(text: str) -> str:
    """argparse type of ``--device``: the spelling is checked when parsed, whether a CUDA device exists later."""
    if not _DEVICE_RE.match(text or ""):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device; use {DEVICE_HELP} (e.g. cuda:0)")
    return text


def add_model_arguments(parser, *, model: str | None = None, model_default_text: str | None = None,
                        required: bool = False, purpose: str = "", backend: str | None = "hf",
                        backends: Sequence[str] | None = None, device_default: str | None = "auto",
                        base_url: bool = True, with_device: bool = True, dtype: bool = False,
                        add: Callable | None = None) -> None:
    """Add ``--model``, ``--backend``, ``--base-url`` and ``--device`` (``--dtype`` when ``dtype``) to ``parser``.

    ``model``: the default model (None: the command's own default, said by ``model_default_text``);
    ``purpose``: what the model is for when the command also has other models (e.g. ``"prego: "``);
    ``backend``/``device_default``: argparse defaults (None where a config file supplies them, as in the run);
    ``backends``: the backends the command can use (default: every registered one, plugins included);
    ``add``: the command's own ``add_argument`` (the run's appends the config's defaults to each help)."""
    a = add or parser.add_argument
    a("--model", default=model, required=required, metavar="MODEL",
      help=model_help(model_default_text or model, purpose))
    choices = list(backends) if backends is not None else list(BACKEND_REGISTRY.names())
    shown = "; ".join(f"{n}: {BACKEND_REGISTRY.get(n).description}" for n in choices)
    a("--backend", default=backend, choices=choices,
      help=f"model backend{f' (default {backend})' if backend else ''}. {shown}")
    if base_url:
        a("--base-url", default=None, help=BASE_URL_HELP)
    if with_device:
        a("--device", default=device_default, type=device,
          help=f"{DEVICE_HELP}{f' (default {device_default})' if device_default else ''}")
    if dtype:
        a("--dtype", default=None, help="bfloat16/float16/float32 (or bf16/fp16/fp32; default: bf16 on GPU, fp32 "
                                         "on CPU)")


def model_name(args) -> str | None:
    """The model asked for, None for the embedded tiny model (``--model tiny`` or none)."""
    name = getattr(args, "model", None)
    return None if name in (None, TINY) else name


def check_model_arguments(args, *, model: bool = True) -> None:
    """Before any work: the device exists here (for a backend that runs here) and, when ``model``, the model name
    is an alias, a folder with config.json or a hub id (offline: one in the local cache). A
    :class:`~ego_adr.errors.UserError` (one line, exit 2) otherwise."""
    backend = getattr(args, "backend", None) or "hf"
    dev = getattr(args, "device", None)
    if dev:
        check_device(dev, backend)
    if model:
        check_model_name(model_name(args), backend)
