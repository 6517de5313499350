"""``python -m ego_adr.agents launch``: the command line of :func:`ego_adr.agents.launch.run_launch` (a white and
a green agent on loopback, the embedded demo evaluated over A2A, both stopped at the end)."""

from __future__ import annotations

from ego_adr.agents.launch import TINY_MAX_NEW_TOKENS, run_launch
from ego_adr.errors import OneLineParser
from ego_adr.folders import add_out_argument
from ego_adr.models.arguments import add_model_arguments


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m ego_adr.agents launch",
                                description="Evaluate the Ego-ADR white agent with the green agent on the "
                                            "embedded demo set, over A2A on loopback; stops both at the end.")
    p.add_argument("--task", choices=["multiple-choice", "open-end"], default="multiple-choice")
    add_out_argument(p, "the evaluation's folder (default: runs/a2a-demo-<task>)", dest="output_dir",
                     fresh="the green agent's predictions, judgements, metrics, reports and both agents' logs")
    add_model_arguments(p, model="tiny", purpose="the white agent's model: ", device_default="cpu")
    p.add_argument("--mode", default="auto")
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help=f"white agent answer cap (default: {TINY_MAX_NEW_TOKENS} for the tiny model, else 256)")
    p.add_argument("--question-wording", choices=["public", "ego_adr"], default=None,
                   help="multiple-choice questions: the public green agent's (read from its source) or ours "
                        "(default: public when its source is found, else ours, with a note)")
    p.add_argument("--public-evaluator-root", default=None,
                   help="folder with the public evaluator's src/ (default: $EGO_ADR_PUBLIC_EVALUATOR)")
    from ego_adr.errors import run_cli

    return run_cli(lambda: _launch(p.parse_args(argv)), interrupted="interrupted; both agents were stopped")


def _launch(a) -> int:
    from ego_adr.models.arguments import check_model_arguments
    from ego_adr.store import check_writable_dir

    check_model_arguments(a)  # before two servers start
    if a.output_dir:
        check_writable_dir(a.output_dir, "--out")
    run_launch(a.task, a.output_dir, a.frames, a.mode, a.limit, a.concurrency, a.model, a.max_new_tokens,
               question_wording=a.question_wording, public_evaluator_root=a.public_evaluator_root,
               backend=a.backend, device=a.device, base_url=a.base_url, fresh=a.fresh)
    return 0
