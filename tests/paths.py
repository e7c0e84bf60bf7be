"""Where the tests find the repository and the public data beside it (../shared);
REALDATA_DIR names another place for the public data (a git worktree elsewhere)."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = Path(os.environ.get("REALDATA_DIR") or ROOT.parent / "shared" / "realdata")
