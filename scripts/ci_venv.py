"""Make a virtual environment that sees the packages of the interpreter running this script (``scripts/test_envs.sh``
builds ``.ci/lmms-venv`` with it).

Why not ``python -m venv --system-site-packages``: run from inside a venv, that option gives the new environment
the *base* interpreter's site-packages, not the venv's (the venv module builds on ``sys._base_executable``). A
user who installed torch into their own venv then got a second CUDA torch and its nvidia wheels (about 5.3 GB)
in ``.ci/lmms-venv`` when pip met the torch constraint there (issue 28, item 1; docs/stack-notes.md).

So: outside a venv the new one gets ``--system-site-packages`` as before (``.ci/run`` is that case). Inside a
venv it gets none of the base's packages directly; a ``.pth`` file in its site-packages adds every site folder
of the calling interpreter instead (``site.addsitedir``, so the ``.pth`` files there -- editable installs --
work too), in the calling interpreter's order, after its own folder: what is installed into the new venv wins,
everything else (torch, torchvision, transformers) is the caller's own copy, and pip sees it as installed.

    python scripts/ci_venv.py DIR [--without-pip]

Prints one line saying where the packages come from. Standard library only.
"""

from __future__ import annotations

import argparse
import site
import subprocess
import sys
import venv
from pathlib import Path

PTH_NAME = "_ego_adr_outer_env.pth"


def in_venv() -> bool:
    return sys.prefix != getattr(sys, "base_prefix", sys.prefix)


def caller_site_dirs() -> list[str]:
    """The site folders of this interpreter, in its own order (a venv's first, then the base's if it has them)."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and Path(site.getusersitepackages()).is_dir():
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if Path(d).is_dir()]


def site_dir_of(env: Path) -> Path:
    """The new environment's own site-packages (asked of its interpreter: the layout is the platform's)."""
    py = env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    out = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def make(env: Path, with_pip: bool = True) -> str:
    """Create ``env``; returns the line to print."""
    outer = in_venv()
    venv.EnvBuilder(system_site_packages=not outer, with_pip=with_pip, symlinks=sys.platform != "win32").create(env)
    if not outer:
        return f"{env}: a venv over {sys.prefix}'s site-packages (--system-site-packages)"
    dirs = caller_site_dirs()
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in dirs)
    (site_dir_of(env) / PTH_NAME).write_text(lines, encoding="utf-8")
    return f"{env}: a venv over the packages of the venv {sys.prefix} ({', '.join(dirs)}), not the base interpreter's"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/ci_venv.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="the environment to create")
    ap.add_argument("--without-pip", action="store_true", help="no pip in the new environment (tests)")
    a = ap.parse_args(argv)
    print(make(a.dir, with_pip=not a.without_pip), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
