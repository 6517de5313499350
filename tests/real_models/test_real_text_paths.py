"""Every text path of ego_adr run by a real language model (issue 36)."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DATA = Path(os.environ.get("EGO_ADR_ONLINE_MISTAKES") or SHARED / "online-mistakes")
