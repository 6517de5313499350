"""What the public EgoErrorVQA agents need and their checkout lacks, for the subprocesses of the parity tests
(not a test module; ``test_public_parity.py``'s harness and ``public_white_runner.py`` import it).

The public ``src/green_agent/agent.py`` imports a ``src.my_util`` package that is not in the public checkout (its
A2A client and tag parser), and writes results under a folder in its authors' home. Each test supplies its own
client and parser; this module registers them as that package, imports the public files unmodified, and sends
the results folder to a scratch folder.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import sys
import types

RESULTS_PREFIX = "/home/junlong_li/egoerrorbench/results"  # hard-coded in the public green agent


def install_my_util(create_a2a_client, send_message_with_client, parse_tags) -> None:
    """Register ``src.my_util`` (with ``my_a2a``) built from the given stand-ins."""
    my_a2a = types.ModuleType("src.my_util.my_a2a")
    my_a2a.create_a2a_client, my_a2a.send_message_with_client = create_a2a_client, send_message_with_client
    src, util = types.ModuleType("src"), types.ModuleType("src.my_util")
    src.__path__, util.__path__ = [], []
    util.my_a2a, util.parse_tags = my_a2a, parse_tags
    sys.modules.update({"src": src, "src.my_util": util, "src.my_util.my_a2a": my_a2a})


def load_public(public_root: str, name: str, relative: str):
    """Import one public file as it is (``relative`` to the public checkout) under module name ``name``."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(public_root, relative))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def redirect_results(mod, scratch: str) -> None:
    """Make ``mod``'s ``os.makedirs`` and ``open`` write what goes under :data:`RESULTS_PREFIX` into ``scratch``."""

    def redirect(p):
        p = os.fspath(p)
        return scratch + p[len(RESULTS_PREFIX):] if p.startswith(RESULTS_PREFIX) else p

    shim = types.ModuleType("os")
    shim.__dict__.update(os.__dict__)
    shim.makedirs = lambda p, exist_ok=False: os.makedirs(redirect(p), exist_ok=exist_ok)
    mod.os = shim
    mod.open = lambda f, *a, **k: builtins.open(redirect(f), *a, **k)
