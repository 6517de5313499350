"""The run's configuration stops at ``run/``: followed from ``run/runner.py:execute`` through every call, no
function of ``reasoning/`` receives a :class:`RunConfig` (issue 37 item 1).

Why a traced run and not a reading of the source: a config travels under any name (``cfg``, ``config``, a
closure, an attribute of an object handed down), and duck typing hides it from the import rules of
``tests/test_layout.py``. So every call into a ``reasoning/`` module during real runs (multiple choice in deep
mode, which builds a procedure bank; open-ended answering) is watched, in the decoding threads too, and each
argument -- and each attribute of an argument, for a config an object was built with -- is checked. The method
receives the protocol's resolved settings and names (``RunConfig.protocol_settings``), never the config.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

import ego_adr.reasoning
from ego_adr.run.config import RunConfig

REASONING = str(Path(ego_adr.reasoning.__file__).resolve().parent)
_VARARGS, _VARKW = 0x04, 0x08  # code flags: the function takes *args / **kwargs


def _arguments(frame) -> dict:
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & _VARARGS) + bool(code.co_flags & _VARKW)
    return {name: frame.f_locals.get(name) for name in code.co_varnames[:n]}


def _holds_config(value) -> bool:
    """``value`` is a RunConfig, holds one (a container, *args / **kwargs) or carries one as an attribute."""
    inner = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, list | tuple) \
        else []
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(value, type(sys)):
        inner += list(attrs.values())
    return isinstance(value, RunConfig) or any(isinstance(v, RunConfig) for v in inner)


class Watch:
    """Records every call into reasoning/ and the ones whose arguments hold a RunConfig, in every thread."""

    def __init__(self) -> None:
        self.calls = 0
        self.received: list[str] = []
        self.seen_settings = False

    def __call__(self, frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(REASONING):
            return
        self.calls += 1
        for name, value in _arguments(frame).items():
            if _holds_config(value):
                code = frame.f_code
                self.received.append(f"{Path(code.co_filename).name}:{code.co_firstlineno} "
                                     f"{code.co_name}({name}=...)")
            self.seen_settings |= type(value).__name__ == "ProtocolSettings"

    def __enter__(self) -> Watch:
        sys.setprofile(self)
        threading.setprofile(self)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(None)
        threading.setprofile(None)


def test_the_watch_sees_a_config_handed_to_reasoning():
    # the check is only worth something if it fails: a RunConfig given to a reasoning/ function (as an argument,
    # and inside an object it is built with) is reported
    from ego_adr.reasoning.bank_model import BankModelLoader

    with Watch() as w:
        loader = BankModelLoader("some-model", RunConfig())
        loader.fingerprint  # noqa: B018
    assert any("__init__(load=...)" in r for r in w.received)


@pytest.mark.parametrize("task, mode", [("multiple-choice", "deep"), ("open-end", "auto")])
def test_no_reasoning_function_receives_the_run_config(tmp_path, tiny_model_dir, demo_root, task, mode):
    from ego_adr.run.runner import execute

    cfg = RunConfig(task=task, mode=mode, limit=1, max_new_tokens=8, batch_size=1,
                    output_dir=str(tmp_path / "o"))
    with Watch() as w:
        execute(cfg, progress=False)
    assert w.calls > 50 and w.seen_settings  # the run went through the method, and the watch saw its arguments
    assert w.received == []
