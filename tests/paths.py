"""Where the tests find the repository and the public data beside it (../shared)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"
