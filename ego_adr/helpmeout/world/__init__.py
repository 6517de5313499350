"""The symbolic world episodes happen in: the object hierarchy (``ontology``, Table 5), states and actions
(``domain``), the 38 operators (``operators`` and its ``operator_*`` parts, Table 6), the lifted task templates
(``templates``, Table 7) and their grounding per episode (``lifting``), the planner that solves a template into a
correct reference (``trajectory_planner``, ``subgoal_methods``) and the replay that validates any trajectory (``replay``).
Nothing here knows about errors or monitors."""
