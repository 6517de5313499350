"""Running experiments: configuration, the runners over one shared loop, judging, ablation grids and the shard
launcher. ``python -m ego_adr.run`` is the main job (:mod:`ego_adr.run.cli`)."""
