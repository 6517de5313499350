"""Episodes: paired correct/errorful trajectories, splits, JSONL files and release statistics.

An episode is what Figure 1 shows: the task name, the initial scene, the goal, the correct reference trajectory
and the observed one (identical for a *correct* episode), both in PDDL notation and ending with the ``(task-end)``
event; per observed step a 0/1 label (1 at each error onset), and the errors with category, onset and the block
they edit. Splits follow Table 10's proportions (test 500, validation ~10%, the rest train).

Determinism: episode ``i`` is generated from its own RNG seeded by ``(seed, i)`` and its error category comes
from a plan drawn up front, so the files are identical for a seed whatever the number of worker processes.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from ego_adr.helpmeout.generator.injection import (
    CATEGORIES,
    GeneratorConfig,
    GoalControlModel,
    Injection,
    onsets,
    program,
    target_shares,
    try_inject,
)
from ego_adr.helpmeout.world.domain import TASK_END, goal_unmet, state_from_facts
from ego_adr.helpmeout.world.lifting import ground
from ego_adr.helpmeout.world.replay import replay
from ego_adr.helpmeout.world.templates import Template, instantiate_scene, load_templates
from ego_adr.helpmeout.world.trajectory_planner import PlanError, Step, plan, scene_state

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class EpisodeSpec:
    index: int
    correct: bool
    category: str | None  # first error's category (None for a correct episode)
    complexity: str | None = None  # Table 14's template complexity the episode is drawn from (None: any)


def plan_release(n: int, seed: int, cfg: GeneratorConfig, shares: dict[str, float]) -> list[EpisodeSpec]:
    """Which episodes are correct and which category each errorful one gets: exact largest-remainder quotas."""
    rng = random.Random(f"helpmeout-plan:{seed}")
    n_correct = round(cfg.correct_share * n)
    n_err = n - n_correct
    raw = {c: shares[c] * n_err for c in CATEGORIES}
    quota = {c: int(raw[c]) for c in CATEGORIES}
    for c in sorted(CATEGORIES, key=lambda c: -(raw[c] - quota[c]))[: n_err - sum(quota.values())]:
        quota[c] += 1
    cats: list[str | None] = [c for c in CATEGORIES for _ in range(quota[c])] + [None] * n_correct
    rng.shuffle(cats)
    cx = _quotas(COMPLEXITY_MIX, n)
    rng.shuffle(cx)
    return [EpisodeSpec(i, c is None, c, x) for i, (c, x) in enumerate(zip(cats, cx, strict=True))]


# Table 14: the test split has 121 simple, 291 medium and 88 complex episodes; the release keeps that mix.
COMPLEXITY_MIX = {"simple": 121 / 500, "medium": 291 / 500, "complex": 88 / 500}


def _quotas(shares: dict[str, float], n: int) -> list[str]:
    """``n`` labels in exact largest-remainder proportion to ``shares`` (deterministic, unshuffled)."""
    raw = {k: v * n for k, v in shares.items()}
    q = {k: int(r) for k, r in raw.items()}
    for k in sorted(shares, key=lambda k: -(raw[k] - q[k]))[: n - sum(q.values())]:
        q[k] += 1
    return [k for k in shares for _ in range(q[k])]


@lru_cache(maxsize=4096)
def _reference(template: Template, order: tuple[str, ...], scene_key: tuple) -> tuple[Step, ...]:
    # the correct plan does not depend on distractors, so it is cached per (template, order, locations)
    from ego_adr.helpmeout.world.templates import Scene

    scene = Scene([tuple(f) for f in template.scene], set(scene_key), template.start)
    return tuple(plan(template, scene, order))


def make_episode(spec: EpisodeSpec, seed: int, cfg: GeneratorConfig, templates: tuple[Template, ...],
                 shares: dict[str, float]) -> dict:
    rng = random.Random(f"helpmeout:{seed}:{spec.index}")
    model = GoalControlModel(cfg)
    # A correct episode is the reference of an errorful draw whose error is then not made (the pair of Figure 1b
    # without its errorful half): its task variant is drawn exactly as an errorful one's, so trajectory length
    # does not give away whether an episode is correct (a random monitor's M1 stays at 0.5).
    shadow = spec.category or rng.choices(list(shares), weights=list(shares.values()))[0]
    wanted = [shadow]
    last_error = None
    pool = [t for t in templates if t.complexity == spec.complexity] or list(templates)
    for attempt in range(2 * cfg.max_attempts):
        # a short task variant may admit no edit of the wanted category: every 20 failed draws the variant grows by
        # a block; last of all any template of any complexity is tried whole (so that no seed can fail)
        lifted = rng.choice(pool if attempt < cfg.max_attempts else templates)
        lift = replace(cfg.lift, extra_blocks=attempt // 20) if attempt < cfg.max_attempts else \
            replace(cfg.lift, p_keep_block=1.0)
        try:
            # Table 8 filters trajectories under 10 steps: a variant that short grows by a block (so that a template
            # with short blocks is still used) until it is long enough or whole
            for grow in range(len(lifted.blocks)):
                t, mapping, moved, keep = ground(lifted, rng, replace(lift, extra_blocks=lift.extra_blocks + grow))
                scene = instantiate_scene(t, rng, p_distractor=cfg.p_distractor)
                order = t.random_order(rng)
                ref = list(_reference(t, order, tuple(sorted(scene.locations))))
                if len(ref) >= cfg.min_length or len(keep) == len(lifted.blocks):
                    break
        except PlanError:
            last_error = f"{lifted.name}: grounding {mapping} is not plannable"
            continue
        if len(ref) < cfg.min_length:
            continue
        state = scene_state(scene)
        act = model.activations(len(order), rng)
        inj = Injection(program(t, order))
        got = try_inject(wanted[0], inj, t, scene, state, order, act, model, rng, ref, cfg.max_sites)
        if got is None:
            last_error = f"{wanted[0]} infeasible"
            continue
        if spec.correct:
            return _record(spec, seed, t, scene.facts, state, order, ref, ref, [], [], scene.distractors,
                           (mapping, moved, keep))
        inj, real = got
        if model.second_error(act, rng):
            cats = list(shares)
            for _ in range(3):
                c2 = rng.choices(cats, weights=[shares[c] for c in cats])[0]
                got2 = try_inject(c2, inj, t, scene, state, order, act, model, rng, ref, cfg.max_sites)
                if got2 is not None:
                    inj, real = got2
                    break
        ons = onsets(inj, real)
        return _record(spec, seed, t, scene.facts, state, order, ref, real.steps, inj.errors, ons, scene.distractors,
                       (mapping, moved, keep))
    raise RuntimeError(f"episode {spec.index}: no template admits a {spec.category} error after "
                       f"{cfg.max_attempts} draws ({last_error}); lower max_sites or check the templates")


def _record(spec: EpisodeSpec, seed: int, t: Template, facts: list, state, order, ref: list[Step],
            obs: list[Step], errors: list, ons: list[int], distractors: dict,
            grounding: tuple[dict, tuple, tuple] = ({}, (), ())) -> dict:
    n = len(obs)
    labels = [0] * (n + 1)
    errs = []
    for rec, o in zip(errors, ons, strict=True):
        labels[o] = 1
        errs.append({"category": rec.category, "onset": o, "block": rec.block, "detail": rec.detail,
                     "at_end": o == n})
    first = min(ons) if ons else None
    primary = errors[ons.index(first)].category if errors else None
    return {
        "id": f"hmo-{seed}-{spec.index:06d}",
        "index": spec.index,
        "task": t.name,
        "family": t.family,
        "complexity": t.complexity,
        "anchor": t.anchor,
        "initial_scene": state.facts(),
        "goal": ["(" + " ".join(g) + ")" for g in t.goal],
        "block_order": list(order),
        "template_blocks": list(grounding[2]),
        "grounding": {"roles": dict(sorted(grounding[0].items())), "moved_out": sorted(grounding[1])},
        "distractors": dict(sorted(distractors.items())),
        "reference": [s.text for s in ref] + [TASK_END],
        "reference_blocks": [s.block for s in ref] + ["end"],
        "observed": [s.text for s in obs] + [TASK_END],
        "observed_blocks": [s.block for s in obs] + ["end"],
        "labels": labels,
        "errors": errs,
        "correct": not errs,
        "primary_category": primary,
        "first_onset": first,
        "categories": sorted({e["category"] for e in errs}),
    }


def _work(args: tuple) -> dict:
    spec, seed, cfg, tdir, shares = args
    return make_episode(spec, seed, cfg, load_templates(tdir), shares)


def generate(n: int, seed: int, cfg: GeneratorConfig | None = None, templates_dir: str | None = None,
             workers: int = 1, progress: bool = True) -> list[dict]:
    cfg = cfg or GeneratorConfig()
    shares = target_shares()
    specs = plan_release(n, seed, cfg, shares)
    load_templates(templates_dir)  # fail fast on a bad template directory
    jobs = [(s, seed, cfg, templates_dir, shares) for s in specs]
    from tqdm import tqdm

    if workers > 1:
        import multiprocessing as mp

        # spawn, not fork: a forked child of a process that runs threads (a notebook's, a server's, a test worker's)
        # can start with one of their locks held and hang for ever; the suite's worker did (issue 46)
        with mp.get_context("spawn").Pool(workers) as pool:
            it: Iterable[dict] = pool.imap(_work, jobs, chunksize=64)
            return list(tqdm(it, total=n, disable=not progress, desc="episodes"))
    return [_work(j) for j in tqdm(jobs, disable=not progress, desc="episodes")]


def assign_splits(episodes: list[dict], seed: int, test_size: int = 500, val_frac: float = 2022 / 20000) -> None:
    """Table 10: a 500-episode test set (capped at a quarter of a small release), ~10% validation, rest train.

    The test set is drawn stratified by (complexity, primary category or correct), so that its composition is the
    release's in exact proportion: 188 correct / 312 errorful, 121 / 291 / 88 simple / medium / complex
    (Tables 2 and 14) and Table 12's per-category counts, up to rounding.
    """
    n = len(episodes)
    rng = random.Random(f"helpmeout-split:{seed}")
    n_test = min(test_size, n // 4)
    n_val = min(round(val_frac * n), n - n_test)
    def largest_remainder(sizes: dict, total: int) -> dict:
        raw = {k: total * v / max(1, sum(sizes.values())) for k, v in sizes.items()}
        q = {k: int(r) for k, r in raw.items()}
        for k in sorted(sizes, key=lambda k: (-(raw[k] - q[k]), k))[: total - sum(q.values())]:
            q[k] += 1
        return q

    # primary category (or correct) first, so that Table 12's small counts come out exact; complexity within it
    cells: dict[str, dict[str, list[int]]] = {}
    for i, ep in enumerate(episodes):
        cells.setdefault(ep["primary_category"] or "correct", {}).setdefault(ep["complexity"], []).append(i)
    test: set[int] = set()
    per_cat = largest_remainder({c: sum(map(len, v.values())) for c, v in cells.items()}, n_test)
    for c in sorted(cells):
        per_cx = largest_remainder({x: len(v) for x, v in cells[c].items()}, per_cat[c])
        for x in sorted(cells[c]):
            members = list(cells[c][x])
            rng.shuffle(members)
            test.update(members[: per_cx[x]])
    rest = [i for i in range(n) if i not in test]
    rng.shuffle(rest)
    val = set(rest[:n_val])
    for i, ep in enumerate(episodes):
        ep["split"] = "test" if i in test else ("val" if i in val else "train")


def release_stats(episodes: list[dict]) -> dict:
    """Figure 7 / Figure 8 numbers: category shares over all injected errors vs the targets, and composition."""
    cats = Counter(e["category"] for ep in episodes for e in ep["errors"])
    total = sum(cats.values())
    tgt = target_shares()
    errorful = [ep for ep in episodes if not ep["correct"]]
    firsts = Counter(ep["errors"][0]["category"] for ep in errorful)
    laters = Counter(e["category"] for ep in errorful for e in ep["errors"][1:])
    return {
        "episodes": len(episodes),
        "splits": dict(Counter(ep.get("split", "all") for ep in episodes)),
        "correct_episodes": len(episodes) - len(errorful),
        "errorful_episodes": len(errorful),
        "injected_errors": total,
        "errors_per_errorful_episode": round(total / max(1, len(errorful)), 4),
        "multi_error_episodes": sum(len(ep["errors"]) > 1 for ep in episodes),
        "category_counts": {c: cats.get(c, 0) for c in CATEGORIES},
        # Figure 7's explanation of action addition: where each category's errors come from, an episode's first
        # injected error (its planned category) or a later one (the goal-control model's second error)
        "first_error_counts": {c: firsts.get(c, 0) for c in CATEGORIES},
        "later_error_counts": {c: laters.get(c, 0) for c in CATEGORIES},
        "category_shares": {c: round(cats.get(c, 0) / max(1, total), 4) for c in CATEGORIES},
        "target_shares": {c: round(tgt[c], 4) for c in CATEGORIES},
        "max_share_gap_pp": round(100 * max(abs(cats.get(c, 0) / max(1, total) - tgt[c]) for c in CATEGORIES), 2),
        "primary_counts": dict(Counter(ep["primary_category"] for ep in errorful)),
        "mean_observed_length": round(sum(len(ep["observed"]) for ep in episodes) / max(1, len(episodes)), 2),
        "mean_reference_length": round(sum(len(ep["reference"]) for ep in episodes) / max(1, len(episodes)), 2),
        "positive_step_rate": round(sum(sum(ep["labels"]) for ep in episodes)
                                    / max(1, sum(len(ep["labels"]) for ep in episodes)), 4),
        "tasks": dict(sorted(Counter(ep["task"] for ep in episodes).items())),
        "complexity": dict(sorted(Counter(ep["complexity"] for ep in episodes).items())),
        "templates": len({ep["task"] for ep in episodes}),
        "mean_task_variant_blocks": round(sum(len(ep.get("template_blocks", ())) for ep in episodes)
                                          / max(1, len(episodes)), 3),
    }


def shares_table(stats: dict) -> str:
    """Figure 7 as a table: target vs released share per category (percent)."""
    lines = ["| Category | Target % | Released % | Diff (pp) | Count | as first / later error |",
             "|---|---:|---:|---:|---:|---:|"]
    for c in CATEGORIES:
        t, r = 100 * stats["target_shares"][c], 100 * stats["category_shares"][c]
        lines.append(f"| {c} | {t:.1f} | {r:.1f} | {r - t:+.1f} | {stats['category_counts'][c]} | "
                     f"{stats['first_error_counts'][c]} / {stats['later_error_counts'][c]} |")
    later = sum(stats["later_error_counts"].values())
    lines.append(f"| all ({stats['injected_errors']} errors, {stats['errorful_episodes']} errorful episodes) "
                 f"| 100.0 | 100.0 | max {stats['max_share_gap_pp']:.1f} | | "
                 f"{stats['errorful_episodes']} / {later} |")
    lines.append(f"\n{stats['multi_error_episodes']} multi-error episodes "
                 f"({100 * stats['multi_error_episodes'] / max(1, stats['errorful_episodes']):.1f}% of errorful ones); "
                 "a later error's category is drawn from the target shares (Figure 7's 8.4% action addition, "
                 "\"frequently the second error of a multi-error episode\": docs/helpmeout.md, why ours differs)")
    return "\n".join(lines)


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def write_release(episodes: list[dict], out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        write_jsonl(out / f"{split}.jsonl", (ep for ep in episodes if ep["split"] == split))
    stats = release_stats(episodes)
    from ego_adr.helpmeout.generator.composition import compare

    test = [ep for ep in episodes if ep["split"] == "test"]
    if test:
        stats["paper_composition"] = compare(test)
        stats["paper_composition_within_10pct"] = all(v["within_10pct"] for v in stats["paper_composition"].values())
    (out / "stats.json").write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n")
    return stats


def validate_episode(ep: dict) -> list[str]:
    """Replay both trajectories; check labels, onsets and that a correct trajectory reaches the goal."""
    problems: list[str] = []
    try:
        state = state_from_facts(ep["initial_scene"])
    except ValueError as e:
        return [f"bad initial scene: {e}"]
    goal = [tuple(g.strip("()").split()) for g in ep["goal"]]
    for key in ("reference", "observed"):
        steps = ep[key]
        if not steps or steps[-1] != TASK_END:
            problems.append(f"{key} does not end with {TASK_END}")
            continue
        onsets = {e["onset"] for e in ep["errors"]} if key == "observed" else set()
        res = replay(state, steps[:-1], may_fail=onsets)  # an error onset may be a failed attempt
        if not res.ok:
            problems.append(f"{key} invalid at step {res.failed_at}: {res.reason}")
            continue
        if key == "reference" and goal_unmet(res.state, goal):  # type: ignore[arg-type]
            problems.append(f"reference does not reach the goal: {goal_unmet(res.state, goal)}")  # type: ignore[arg-type]
    if len(ep["labels"]) != len(ep["observed"]):
        problems.append("labels and observed steps differ in length")
    onset_set = {e["onset"] for e in ep["errors"]}
    if {i for i, v in enumerate(ep["labels"]) if v} != onset_set:
        problems.append("labels disagree with error onsets")
    if ep["correct"] != (not ep["errors"]) or (ep["correct"] and ep["observed"] != ep["reference"]):
        problems.append("correct flag inconsistent")
    for e in ep["errors"]:
        if e["category"] == "omission" and e["onset"] != len(ep["observed"]) - 1:
            problems.append("omission onset is not the task-end step")
    return problems
