"""The release's composition beside the paper's figures (Table 2's caption and Random row, Tables 12 and 14).

The paper gives no length histogram, but its Random row does: a random monitor's M2 is the positive-step rate
(Table 2's caption), 0.036 over all steps, 0.274 at the task-end step and 0.023 before it, which fixes how long
trajectories are (about 17 steps) and how often errors fall at the end. The 500-episode test split has 188 correct
and 312 errorful episodes, 175 with an error before the task end (M3's denominator), 137 omission episodes
(Table 15) and Table 12's per-category counts; Table 14 its complexity mix (121 / 291 / 88).
"""

from __future__ import annotations

PAPER_TEST = {
    "random_M2_all": 0.036, "random_M2_end": 0.274, "random_M2_mid": 0.023,  # Table 2, Random row
    "correct_episodes": 188, "errorful_episodes": 312,  # Table 2 caption
    "error_before_end_episodes": 175,  # Table 2 caption / Table 15
    "omission_episodes": 137,  # Table 12 / Table 15
    "simple_episodes": 121, "medium_episodes": 291, "complex_episodes": 88,  # Table 14
}
PAPER_TABLE12 = {"omission": 137, "sequence": 38, "anticipation": 17, "perseveration": 26,
                 "object_substitution": 30, "tool_substitution": 9}  # Table 12: test episodes per primary category
TOLERANCE = 0.10  # the "within 10% relative"


def positive_rates(episodes: list[dict]) -> dict[str, float]:
    """What a random monitor's M2 all / end / mid is on these episodes."""
    n_all = sum(len(ep["labels"]) for ep in episodes)
    n_mid = n_all - len(episodes)
    pos_end = sum(ep["labels"][-1] for ep in episodes)
    pos_mid = sum(sum(ep["labels"][:-1]) for ep in episodes)
    return {"all": (pos_end + pos_mid) / max(1, n_all), "end": pos_end / max(1, len(episodes)),
            "mid": pos_mid / max(1, n_mid)}


def test_composition(test: list[dict], size: int = 500) -> dict[str, float]:
    """The split's figures, counts scaled to ``size`` episodes so a smaller test split compares too."""
    k = size / max(1, len(test))
    r = positive_rates(test)
    out: dict[str, float] = {"random_M2_all": r["all"], "random_M2_end": r["end"], "random_M2_mid": r["mid"]}
    out["correct_episodes"] = k * sum(ep["correct"] for ep in test)
    out["errorful_episodes"] = k * sum(not ep["correct"] for ep in test)
    out["error_before_end_episodes"] = k * sum(not ep["correct"] and ep["first_onset"] < len(ep["observed"]) - 1
                                               for ep in test)
    out["omission_episodes"] = k * sum(ep["primary_category"] == "omission" for ep in test)
    for cx in ("simple", "medium", "complex"):
        out[f"{cx}_episodes"] = k * sum(ep["complexity"] == cx for ep in test)
    for c in PAPER_TABLE12:
        out[f"table12_{c}"] = k * sum(ep["primary_category"] == c for ep in test)
    return out


def compare(test: list[dict]) -> dict[str, dict]:
    """Each figure: ours, the paper's, the relative difference and whether it is within 10%."""
    ours = test_composition(test)
    paper = dict(PAPER_TEST, **{f"table12_{c}": v for c, v in PAPER_TABLE12.items()})
    out = {}
    for key, p in paper.items():
        o = ours[key]
        rel = (o - p) / p
        out[key] = {"ours": round(o, 4), "paper": p, "rel_diff": round(rel, 4), "within_10pct": abs(rel) <= TOLERANCE}
    return out


def composition_table(cmp: dict[str, dict]) -> str:
    lines = ["| Figure (test split, per 500 episodes) | Ours | Paper | Rel. diff | Within 10% |",
             "|---|---:|---:|---:|---|"]
    for key, v in cmp.items():
        fmt = ".3f" if key.startswith("random") else ".1f"
        lines.append(f"| {key} | {v['ours']:{fmt}} | {v['paper']} | {100 * v['rel_diff']:+.1f}% | "
                     f"{'yes' if v['within_10pct'] else 'NO'} |")
    return "\n".join(lines)
