"""What every settings section shares: unknown keys are errors, and the folder opsbot keeps its state in."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

DEFAULT_STATE_DIR = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "opsbot"


class Section(BaseModel):
    """One section of Settings. A key it does not know (a typo in OPSBOT_PROMETHEUS__URLL, in the config file or in a
    JSON value) is an error that names it, not a setting silently left at its default."""

    model_config = ConfigDict(extra="forbid")
