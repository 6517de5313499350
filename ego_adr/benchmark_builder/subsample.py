"""Proportional subsampling of the annotated segments, per source and type (paper Section 3.1).

Why: the paper "subsample[s] each dataset proportionally to its size" and counts the result per source as correct
and error samples (Table 2: 1,000 / 215 / 182 / 460 multiple-choice clips, e.g. 660 correct and 340 error for
CaptainCook4D). ``data build --subsample N`` keeps ``N`` segments so that every stratum -- one source's correct
segments, or its error segments -- keeps its share of the input: stratum ``s`` of size ``n_s`` out of ``n`` gets
``N * n_s / n`` segments, rounded by the largest-remainder rule (each stratum gets the floor of its quota, and
the segments still to give go to the largest fractional parts; ties by source name, then correct before error),
so no stratum is more than one segment off its exact quota and the total is exactly ``N``. Which segments of a
stratum are kept is a seeded draw (``--subsample-seed``, default 0): the stratum's rows are shuffled by a
generator seeded with the seed and the stratum's name, and the first ones kept. So a stratum's draw depends only
on the seed, the stratum and how many it keeps, and keeping more of a stratum keeps a superset of what keeping
fewer kept. The kept rows stay in file order.

A row's type is what the annotation says: correct (empty labels or ``correct``) or an error (any other label,
including one that the LLM is still to name the type of), so the draw never waits for a model.
"""

from __future__ import annotations

import math
import random

from ego_adr.errors import UserError

CORRECT, ERROR = "correct", "error"


def stratum(row) -> tuple[str, str]:
    """(source, ``correct`` | ``error``) of a row (:class:`ego_adr.data.build_input.Row`)."""
    return row.source, CORRECT if row.correct else ERROR


def _order(key: tuple[str, str]) -> tuple[str, int]:
    return key[0], 0 if key[1] == CORRECT else 1


def allocate(sizes: dict[tuple[str, str], int], total: int) -> dict[tuple[str, str], int]:
    """How many of each stratum to keep: ``total`` split in proportion to ``sizes`` (largest remainder)."""
    n = sum(sizes.values())
    if not 0 < total <= n:
        raise UserError(f"--subsample {total}: give a number of segments from 1 to {n} (the usable rows)")
    quota = {k: total * v / n for k, v in sizes.items()}
    out = {k: math.floor(q) for k, q in quota.items()}
    left = total - sum(out.values())
    for k in sorted(quota, key=lambda k: (-(quota[k] - out[k]), _order(k)))[:left]:
        out[k] += 1
    return out


def subsample(rows: list, total: int, seed: int = 0) -> tuple[list, dict]:
    """The kept rows (file order) and the record of the draw (``build/subsample.json``)."""
    by: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        by.setdefault(stratum(r), []).append(i)
    keep_n = allocate({k: len(v) for k, v in by.items()}, total)
    kept: set[int] = set()
    for k, idx in by.items():
        order = list(idx)
        random.Random(f"ego_adr.subsample/{seed}/{k[0]}/{k[1]}").shuffle(order)
        kept.update(order[: keep_n[k]])
    out = [r for i, r in enumerate(rows) if i in kept]
    strata = [
        {"source": k[0], "type": k[1], "rows": len(by[k]), "quota": total * len(by[k]) / len(rows),
         "kept": keep_n[k]}
        for k in sorted(by, key=_order)
    ]
    record = {
        "rule": "proportional per source and correct/error, largest remainder (paper Section 3.1)",
        "seed": seed,
        "rows": len(rows),
        "kept": len(out),
        "strata": strata,
        "kept_lines": [r.line for r in out],
    }
    return out, record

