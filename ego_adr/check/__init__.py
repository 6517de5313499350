"""``python -m ego_adr.check``: Ego-ADR on one's own clips, without a dataset layout (see :mod:`.core`)."""
