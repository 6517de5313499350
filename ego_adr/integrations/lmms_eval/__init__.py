"""EgoErrorVQA and Ego-ADR inside lmms-eval (EvolvingLMMs-Lab, 0.7.x): an lmms-eval plugin shipped with ego_adr.

Why: researchers compare video-language models in lmms-eval; this package lets them run EgoErrorVQA there, and run
Ego-ADR as one more lmms-eval model, with every number computed by :mod:`ego_adr.eval` (never a second scorer).

* ``tasks/`` -- the task YAMLs, found by ``--include_path`` (:data:`TASKS_DIR`, printed by ``python -m
  ego_adr.integrations.lmms_eval``; ``LMMS_EVAL_PLUGINS`` would add ``<plugin>.tasks`` too, but lmms-eval 0.7.3
  reads it only after building its task index): ``egoerrorvqa_mc`` (a group, one subtask per public source),
  ``egoerrorvqa_oe`` and ``egoerrorvqa_mc_demo`` (the embedded demo set, offline);
* :mod:`.docs` -- the documents, from the source registry, and the clip every model sees (the public protocol's);
* :mod:`.results` -- ``process_results`` and the aggregations, through :mod:`ego_adr.eval`;
* ``models/`` -- ``--model ego_adr``: the whole Ego-ADR pipeline as an lmms-eval model (entry point
  ``lmms_eval.models``, or the same ``LMMS_EVAL_PLUGINS``, which imports ``<plugin>.models``).

Nothing here is imported by the core, and only ``models/`` imports lmms-eval (``pip install -e '.[lmms-eval]'``).
"""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent / "tasks"  # what --include_path names
