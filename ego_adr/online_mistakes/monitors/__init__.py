"""The step-stream monitors, one module per method; each is registered in :mod:`ego_adr.online_mistakes.registry`."""
