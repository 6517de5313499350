"""A2A agents for EgoErrorVQA (paper Section 1, Appendix B).

- :mod:`ego_adr.agents.white`: the Ego-ADR white agent (answers questions about a clip);
- :mod:`ego_adr.agents.green`: the evaluator (sends every benchmark question to any white agent, scores them);
- :mod:`ego_adr.agents.messages`: the message formats both share with the public evaluator;
- :mod:`ego_adr.agents.serving`, :mod:`ego_adr.agents.client`: serving and calling agents;
- :mod:`ego_adr.agents.launch`: ``python -m ego_adr.agents launch`` (the demo evaluation over A2A).

Nothing heavy is imported here: the a2a-sdk, torch and the model load only when an agent starts.
"""
