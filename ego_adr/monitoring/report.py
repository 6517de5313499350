"""Report helpers every benchmark on the layer shares: numbers in Markdown tables, and how a privileged monitor
is named in them.

A missing number (``None``, NaN: a metric with no positives, a subset with no episodes) prints as a dash, never
as 0 or ``nan``; HelpMeOut's tables use the paper's en dash, the video stream's a plain hyphen.
"""

from __future__ import annotations

from collections.abc import Iterable


def fmt(x, nd: int = 3, missing: str = "–", pct: bool = False) -> str:
    """``x`` with ``nd`` decimals (a percentage with one decimal when ``pct``), ``missing`` for None or NaN."""
    if x is None or x != x:
        return missing
    return f"{100 * x:.1f}" if pct else f"{x:.{nd}f}"


def md_row(cells: Iterable) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def privileged_note(reads: Iterable[str]) -> str:
    """What a privileged monitor's report says of it (reported apart from the monitors that read the task input)."""
    return f"**Privileged / symbolic reference**: it also reads {', '.join(reads)}."


def reads_tag(reads: Iterable[str]) -> str:
    """The suffix a privileged monitor's name gets in a summary table."""
    return f" — reads {', '.join(reads)}"
