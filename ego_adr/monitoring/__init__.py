"""The monitoring layer: what every online mistake-detection benchmark shares.

A *monitor* watches a procedure as it happens: it is reset with what the benchmark gives before the first step
(the task, an initial scene, a step taxonomy) and then fed one observation at a time (one action, one recognised
step, one video window), returning for each the probability that an error has happened by now, the error type
where it has one, the onset it blames and its evidence. It never sees a later observation: the harness in
:mod:`ego_adr.monitoring.monitor` hands them over one by one and checks what comes back.

Benchmarks on this layer (each a :class:`~ego_adr.monitoring.benchmarks.BenchmarkSpec` its room declares in its
``benchmarks.py``, with its episodes, its context, its registry of monitors and the driver the one harness runs):

- HelpMeOut (``helpmeout``): symbolic household episodes, metrics M1-M4 and delay;
- Ego-ADR over whole video recordings (``egoadr-stream``);
- the field's public step streams Assembly101-O and EPIC-Tent-O (PREGO, TI-PREGO, DTGL), cut at the first mistake
  and complete (``assembly101-o``, ``epic-tent-o``, ``assembly101-complete``, ``epic-tent-complete``).

``python -m ego_adr.monitoring evaluate --benchmark B --monitor M|all`` runs any of them, ``list`` lists them.

The metrics are pure functions of a per-step file (one row per observed step: its episode, index, label,
``p_error``, ``flagged``, type, evidence); the registry (:mod:`ego_adr.monitoring.registry`) records what each
monitor reads, so a monitor that reads more than the task input is reported apart as *privileged*.

Modules: ``benchmarks`` (the benchmark registry), ``harness`` (the one order of work of every benchmark),
``settings`` (a run's typed settings), ``workers`` (``--jobs``), ``cli`` (the command), ``monitor`` (the monitor
and ``run_episode``), ``registry`` (a benchmark's monitors), ``per_step`` (the per-step file), ``episode_metrics``
(M1-M4, detection delay, bootstrap, as HelpMeOut defines them), ``ranking`` (AUROC, AP), ``report`` (what every
report prints the same way).
"""
