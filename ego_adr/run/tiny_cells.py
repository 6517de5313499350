"""Ablation grids on tiny random models: each cell on the tiny model of its *own* architecture.

Why: Table 5 compares Qwen2-VL, Qwen2.5-VL and Video-LLaVA; running every row on one tiny Qwen2.5-VL would print
rows labelled Video-LLaVA that never went through Video-LLaVA's processor, chat template or its black-image
stand-in for text-only calls (paper Section 6.4). With ``--tiny`` each row's alias maps to ``tiny-<family>``
(:func:`ego_adr.models.registry.tiny_alias_for`), so each row exercises its family's real code path offline.
The numbers are from random weights and mean nothing, which the printed title says.

Random weights never emit end-of-sequence, so like the offline demo (``ego_adr.run.cli``) tiny cells default to
64 new tokens and batches of 4 unless the grid or the command line sets them; the cells' folders end in
``-tiny`` and their ``run.json`` records the settings.
"""

from __future__ import annotations

from ego_adr.run.config import ConfigError

TINY_MAX_NEW_TOKENS = 64
TINY_BATCH_SIZE = 4
TINY_NOTE = "tiny random models of each row's architecture: the numbers only show that the machinery works"


def tiny_cell(values: dict) -> dict:
    """A cell's run settings with its model replaced by the tiny model of the same architecture."""
    from ego_adr.models.registry import tiny_alias_for

    name = values.get("model")
    try:
        tiny = tiny_alias_for(name) if name else "tiny"
    except ValueError as e:
        raise ConfigError(f"--tiny: {e}") from e
    out = {**values, "model": tiny}
    out.setdefault("max_new_tokens", TINY_MAX_NEW_TOKENS)
    out.setdefault("batch_size", TINY_BATCH_SIZE)
    return out


def tiny_title(title: str, configs: list) -> str:
    """The grid's title, marked when any cell ran a tiny random model."""
    from ego_adr.models.registry import is_tiny

    if any(is_tiny(c.model) for c in configs):
        return f"{title} ({TINY_NOTE})"
    return title
