"""The window of creation times a session listing is narrowed to.

Every adapter sorts its listing on the same key, `encode_cursor(created_ms, session_id)`
(a fixed-width millisecond count, then the id), so a window of creation times is a range of
that key: DynamoDB answers it as a key condition on the listing index (no scan, no filter
expression), and the file and memory stores cut their sorted indexes at the same bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentkit.store.ids import encode_cursor


@dataclass(frozen=True, slots=True)
class StartedWindow:
    """Sessions created at or after `after_ms` and before `before_ms` (epoch milliseconds;
    None leaves that side open). Half-open, so consecutive windows never overlap."""

    after_ms: int | None = None
    before_ms: int | None = None

    @property
    def low(self) -> str | None:
        """The smallest listing key inside the window (inclusive), or None."""
        return None if self.after_ms is None else _bound(self.after_ms)

    @property
    def high(self) -> str | None:
        """A listing key above every key inside the window (exclusive), or None.

        A key is `<ms>~<id>`, so every session created at `before_ms` sorts above the bare
        `<ms>` prefix, and every session created earlier sorts below it.
        """
        return None if self.before_ms is None else _bound(self.before_ms)

    @property
    def empty(self) -> bool:
        """True when no time can be inside the window."""
        return (
            self.after_ms is not None
            and self.before_ms is not None
            and self.after_ms >= self.before_ms
        )

    def holds(self, key: str) -> bool:
        """Whether the listing key `key` lies inside the window."""
        low, high = self.low, self.high
        return (low is None or key >= low) and (high is None or key < high)


def _bound(ms: int) -> str:
    # The key's millisecond field alone: `encode_cursor` pads it, and "" sorts first.
    return encode_cursor(max(0, ms), "").rstrip("~")


__all__ = ["StartedWindow"]
