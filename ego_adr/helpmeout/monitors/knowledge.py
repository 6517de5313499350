"""What a monitor can know about the task: the lifted template, or (privileged) the episode's grounded goal.

A non-privileged monitor reads the lifted template of the episode's task variant: its blocks name *default*
objects ("slice the banana"), while the episode may have grounded the role to a plantain-like look-alike and
put the default banana next to it as a distractor. :class:`RoleResolver` is the honest way to read such a
template: a role whose default is not the only candidate in the scene stays open until the person touches one of
its candidates (first touch binds it), and a goal location until something is put into one of its candidates.
So a lifted-template monitor cannot tell a substituted object from the intended one -- only a monitor that
reads the grounded goal can, which is why those are listed apart as privileged references.
"""

from __future__ import annotations

from ego_adr.helpmeout.monitors.base import EpisodeContext
from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import Action, State
from ego_adr.helpmeout.world.lifting import _roles, apply_grounding, restrict
from ego_adr.helpmeout.world.templates import Template, template_by_name


def task_variant(ctx: EpisodeContext, templates_dir: str | None = None) -> Template:
    """The lifted template restricted to the blocks this episode asked for (public input)."""
    return restrict(template_by_name(ctx.task, templates_dir), ctx.template_blocks)


def grounded_template(ctx: EpisodeContext, templates_dir: str | None = None) -> Template:
    """Privileged: the template with the episode's own grounding (needs ``grounded goal`` in the reads)."""
    if ctx.grounding is None:
        raise RuntimeError("this monitor reads the grounded goal, but the episode context has none "
                           "(declare 'grounded goal' in its registry spec)")
    g = ctx.grounding
    return apply_grounding(task_variant(ctx, templates_dir), dict(g.get("roles", {})), tuple(g.get("moved_out", ())))


class RoleResolver:
    """Binds the lifted template's roles to scene objects from the initial scene and the person's actions."""

    def __init__(self, variant: Template, state: State) -> None:
        self.variant = variant
        present = set(state.pos) | set(state.locations)
        objs, locs = _roles(variant)
        self.candidates: dict[str, tuple[str, ...]] = {}
        self.bound: dict[str, str] = {}
        for name, cands in objs + locs:
            here = tuple(c for c in (name,) + cands if c in present)
            if len(here) == 1:
                self.bound[name] = here[0]
            elif here:
                self.candidates[name] = here
        self.loc_roles = {n for n, _ in locs}

    def observe(self, act: Action) -> None:
        """First touch binds an object role; the first put into a candidate binds a location role."""
        for name, cands in list(self.candidates.items()):
            if name in self.bound:
                continue
            args = act[1:] if name not in self.loc_roles else (act[2:3] if act[0].startswith("human-put") else ())
            hit = next((a for a in args if a in cands), None)
            if hit is not None:
                self.bound[name] = hit

    def mapping(self) -> dict[str, str]:
        """Current best grounding: bound roles, the default where it is a candidate, else the first candidate."""
        out = {}
        for name in set(self.candidates) | set(self.bound):
            y = self.bound.get(name) or (name if name in self.candidates[name] else self.candidates[name][0])
            if y != name:
                out[name] = y
        return out

    def template(self) -> Template:
        return apply_grounding(self.variant, self.mapping())

    def known(self) -> set[str]:
        """Every name the task could legitimately involve (all candidates of every role)."""
        names = self.variant.objects() | self.variant.scene_locations()
        for cands in self.candidates.values():
            names.update(cands)
        names.update(self.bound.values())
        return names


def plausible(name: str, known: set[str]) -> bool:
    """``name`` is a role filler the template allows: named, or of the same subclass and affordances as one."""
    if name in known:
        return True
    from ego_adr.helpmeout.world.lifting import signature

    sub, sig = onto.subclass_of(name), signature(name)
    return any(onto.subclass_of(k) == sub and signature(k) == sig for k in known if not onto.is_location(k))
