"""The errors a tool call is closed with when its tool's own result will never come.

Kept apart from `ending` (which records them) so the metrics of recorded events can tell
the kinds apart without importing the recording path.
"""

from __future__ import annotations

IN_DOUBT = "interrupted while running; it may have completed; not re-run"
# Parked for approval, and the turn ended before anyone decided it.
ABANDONED = "the turn ended before this call was approved; it did not run"
# Approved, and the turn ended before the call started.
APPROVED_NOT_RUN = "the turn ended before this approved call ran; it did not run"

__all__ = ["ABANDONED", "APPROVED_NOT_RUN", "IN_DOUBT"]
