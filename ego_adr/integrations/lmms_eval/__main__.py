"""``python -m ego_adr.integrations.lmms_eval [--model_args ARGS]``: prints the task folder, for ``lmms-eval
--include_path``; with ``--model_args`` (the string ``--model ego_adr`` will get) it first checks them as the model
will -- device, model name and cache, every value -- and stops in one line, exit 2, where the model could not load
(so ``TASKS=$(python -m ego_adr.integrations.lmms_eval --model_args ...) && lmms-eval ...`` never starts lmms-eval
for a run that cannot happen). It also says how to install lmms-eval when its command is missing.

Why the folder is needed: lmms-eval 0.7.3 builds its task index before it reads ``LMMS_EVAL_PLUGINS``, so the
plugin variable registers ``--model ego_adr`` but not the tasks; ``--include_path "$(python -m
ego_adr.integrations.lmms_eval)"`` does (docs/lmms_eval.md).
"""

from __future__ import annotations

import shutil
import sys

from ego_adr.errors import OneLineParser, UserError, run_cli
from ego_adr.integrations.lmms_eval import TASKS_DIR

INSTALL = "pip install -e '.[lmms-eval]' (in a clone of ego_adr; lmms-eval 0.7.x and what it needs)"


def _main(argv) -> int:
    p = OneLineParser(prog="python -m ego_adr.integrations.lmms_eval",
                      description="Print the EgoErrorVQA task folder for lmms-eval --include_path; with --model_args, "
                      "first check that --model ego_adr can load with them.")
    p.add_argument("--model_args", metavar="ARGS", help="the --model_args of --model ego_adr, e.g. "
                   "pretrained=qwen2.5-vl,mode=auto,device=cuda: checked before lmms-eval starts")
    a = p.parse_args(argv)
    if a.model_args is not None:
        from ego_adr.integrations.lmms_eval.config import preflight

        preflight(a.model_args)
        import importlib.util

        if importlib.util.find_spec("lmms_eval") is None:
            raise UserError(f"lmms-eval is not installed in this environment: {INSTALL}")
    if shutil.which("lmms-eval") is None:
        print(f"note: no lmms-eval command on PATH; install it with {INSTALL}", file=sys.stderr)
    print(TASKS_DIR)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_cli(lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
