"""One error base and one command-line wrapper for every entry point (a shared leaf: it imports nothing of ours).

Why a leaf: every layer raises these (a data root that is missing, a model that cannot be loaded, a server that
does not answer), and every CLI turns them into the same exit codes. Keeping them under ``run/`` made ``models/``,
``eval/``, ``check/`` and ``stream/`` import the layer above them.

Exit codes are the shell's conventions, the same for every command:

- :data:`EXIT_USER` (2): a mistake the user can fix (a wrong flag, a missing file, an unknown model), one line;
- :data:`EXIT_INFRASTRUCTURE` (3): the machine or a server failed (nothing was recorded as a result; rerun);
- :data:`EXIT_INTERRUPTED` (130): Ctrl-C, or a SIGTERM/SIGHUP (``kill``, ``timeout``, a closed terminal); what was
  finished is kept.

A SIGTERM or SIGHUP ends a command the way Ctrl-C does (:class:`Terminated`, a ``KeyboardInterrupt``): Python's
default for them ends the process at once, without running a single ``finally``, so a run stopped by ``kill`` or
``timeout`` left its output folder's ``.lock`` behind and a child server's log in the temporary folder.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

EXIT_OK = 0
EXIT_USER = 2
EXIT_INFRASTRUCTURE = 3
EXIT_INTERRUPTED = 130


class EgoADRError(Exception):
    """Base of every error a command reports in one line; ``exit_code`` says which code it ends with."""

    exit_code = EXIT_USER


class UserError(EgoADRError, ValueError):
    """A wrong flag, value or input file: the command stops before doing work, with one line that says what to do."""

    exit_code = EXIT_USER


class ConfigError(UserError):
    """A wrong flag or value (or an output folder that holds other settings): the command stops before doing any
    work, with one line that says what to do."""


class InfrastructureError(EgoADRError, RuntimeError):
    """A server, the decoder or the machine failed: nothing is recorded as a result; rerunning may succeed."""

    exit_code = EXIT_INFRASTRUCTURE


class Terminated(KeyboardInterrupt):
    """The process was asked to stop (SIGTERM, SIGHUP): raised where it was, so every ``with`` and ``finally``
    on the way out runs (folder locks released, child servers stopped), as for Ctrl-C."""


def _terminated(signum, _frame) -> None:
    import signal

    raise Terminated(signal.Signals(signum).name)


class OneLineParser(argparse.ArgumentParser):
    """A wrong flag is one line (what is wrong, where the help is) and exit 2, not the whole usage block."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_USER, f"error: {message} (see {self.prog} --help)\n")


def one_line(e: BaseException) -> str:
    """The message of ``e`` on one line (a multi-line message from a library is folded)."""
    text = " ".join(str(e).split())
    return text or type(e).__name__


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush at exit does not raise on the closed pipe."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run_cli(fn: Callable[[], int | None], *, interrupted: str = "interrupted; rerun the same command to resume",
            user_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Call ``fn`` and turn what it raises into one line on stderr and the shared exit code.

    ``user_errors`` are extra exception types (from libraries) that mean a user mistake at this entry point, for
    example ``FileNotFoundError`` for a command whose only files are the user's. Anything else is a bug and keeps
    its traceback.
    """
    previous = _catch_termination()
    try:
        code = fn()
        return EXIT_OK if code is None else int(code)
    except EgoADRError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"\n{interrupted}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (``| head``): what it wanted was printed; no traceback
        _quiet_stdout()
        return EXIT_OK
    except user_errors as e:  # type: ignore[misc]
        print(f"error: {one_line(e)}", file=sys.stderr)
        return EXIT_USER
    finally:
        _restore(previous)


_STOP_SIGNALS = ("SIGTERM", "SIGHUP")


def _catch_termination() -> dict:
    """SIGTERM and SIGHUP raise :class:`Terminated` while the command runs (in the main thread only: Python takes
    signal handlers there alone); a signal the caller ignores stays ignored. The handlers it replaced."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for name in _STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, _terminated)
    return previous


def _restore(previous: dict) -> None:
    import signal

    for sig, handler in previous.items():
        signal.signal(sig, handler)
