"""Building a benchmark from error-annotated recordings (``python -m ego_adr.data build``; paper Section 3.3, App. A).

The process the paper describes, for anyone's recordings: procedures condensed per task (:mod:`.procedures`), QA
pairs written by an LLM per step segment (:mod:`.qa`), multiple-choice samples with the nine options, a data root
the source registry reads (:mod:`.output`), then people in the loop: a review sheet and page (:mod:`.review`) and
the merge of their decisions (:mod:`.merge`). It calls a model, so it lives above ``models/`` and ``run/``; the
input schema, the converter and ``data stats`` stay in ``data/``.
"""
