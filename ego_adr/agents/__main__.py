"""``python -m ego_adr.agents launch|white|green ...``."""

from __future__ import annotations

import sys

USAGE = """usage: python -m ego_adr.agents COMMAND [ARGS]

commands:
  launch   start a white and a green agent on loopback, evaluate the embedded demo, print the metrics, stop both
  white    run the Ego-ADR white agent        (same as python -m ego_adr.agents.white)
  green    run the EgoErrorVQA green agent    (same as python -m ego_adr.agents.green)
"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "launch":
        from ego_adr.agents.launch_cli import main as run
    elif cmd == "white":
        from ego_adr.agents.white import main as run
    elif cmd == "green":
        from ego_adr.agents.green import main as run
    else:
        print(f"unknown command {cmd!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
