"""A command stopped by SIGTERM or SIGHUP (``kill``, ``timeout``, a closed terminal) ends as Ctrl-C does (issue 46
item 2): every ``with`` on the way out runs, so its output folder's ``.lock`` goes, and the exit code is 130.
Python's default for these signals ends the process without running any ``finally``."""

from __future__ import annotations

import os
import signal
import time

import pytest

from ego_adr.errors import EXIT_INTERRUPTED, Terminated, run_cli
from ego_adr.folders import OutputFolder


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_unwinds_the_command_and_releases_the_folder_lock(name, tmp_path, capsys):
    sig = getattr(signal, name)
    before = signal.getsignal(sig)
    seen: dict = {}

    def work():
        with OutputFolder(tmp_path / "out", {"command": "test"}, "--out", ("result.json",)):
            seen["locked"] = (tmp_path / "out" / ".lock").exists()
            os.kill(os.getpid(), sig)
            time.sleep(10)  # the handler raises here, at once
            seen["went on"] = True

    t0 = time.monotonic()
    assert run_cli(work) == EXIT_INTERRUPTED
    assert time.monotonic() - t0 < 5 and seen == {"locked": True}
    assert not (tmp_path / "out" / ".lock").exists()
    assert signal.getsignal(sig) is before  # the command's handler is gone once it returns
    assert "interrupted" in capsys.readouterr().err


def test_a_signal_the_caller_ignores_stays_ignored(tmp_path):
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        def work():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)  # ignored: nothing happens
            return 0

        assert run_cli(work) == 0
    finally:
        signal.signal(signal.SIGTERM, old)


def test_terminated_is_an_interrupt():
    assert issubclass(Terminated, KeyboardInterrupt)
