"""Replay one recorded session against a bundle, through the real engine.

    report = await replay_session(bundle, events)             # the cassette answers
    report = await replay_session(bundle, events, model=m)    # m answers, tools recorded

The session runs again in a store of its own: its messages are sent again, its approval
decisions made again, its direct tool calls made again, while the cassette stands in for
the model (unless one is given) and every tool answers from the recording. Nothing leaves
the process: no model provider, no tool, no MCP server, no hook is called.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from agentkit.errors import AgentkitError, BadRequest, NotFound
from agentkit.evals.case import EVAL_PRINCIPAL, CaseHost
from agentkit.events import Event
from agentkit.models.base import Model
from agentkit.project.bundle import AgentBundle
from agentkit.replay.cassette import CassetteModel, RecordedTools, ReplayParts
from agentkit.replay.compare import Replayed, divergences
from agentkit.replay.recording import Decision, DirectCall, Message, Recording
from agentkit.replay.report import Divergence, ReplayReport

__all__ = ["replay_session"]

PRINCIPAL = EVAL_PRINCIPAL


async def replay_session(
    bundle: AgentBundle,
    events: list[Event],
    *,
    model: Model | None = None,
    timeout: float = 120.0,
) -> ReplayReport:
    """Replay `events` (one session's stream) on `bundle`; the divergences it finds."""
    recording = Recording.of(events)
    if not recording.messages:  # direct calls alone: nothing the engine would run again
        return ReplayReport(recording.session_id, "cassette", "-", 0, len(recording.calls), 0)
    cassette = CassetteModel(recording)
    answering: Model = model if model is not None else cassette
    tools = RecordedTools(recording)
    host = CaseHost(bundle, lambda _id: answering)
    host.runtime.fanout = None  # the agent's hooks act on the world: they saw it the first time
    parts = ReplayParts(bundle, lambda _id: answering, tools)
    host.runtime.parts = parts
    driver = _Driver(host, recording, cassette, timeout, live=model is not None)
    try:
        try:
            async with asyncio.timeout(timeout):
                await driver.play()
        except TimeoutError:
            why = f"the replay did not finish within {timeout:g}s"
            driver.noted.append(Divergence(driver.at, "replay_stopped", why))
        except AgentkitError as exc:  # the engine refused an input (a busy session, ...)
            why = f"the replay stopped: {exc}"
            driver.noted.append(Divergence(driver.at, "replay_stopped", why))
        replayed = await host.events(driver.session_id) if driver.session_id else []
    finally:
        await host.aclose()
    found = divergences(
        recording,
        Replayed(replayed, driver.ids, driver.noted),
        bundle.manifest,
        live=model is not None,
    )
    return ReplayReport(
        session_id=recording.session_id,
        mode="model" if model is not None else "cassette",
        model=answering.id,
        turns=len(recording.turns),
        calls=len(recording.calls),
        served=len(tools.served),
        divergences=found,
    )


class _Driver:
    """Sends the recorded inputs again, in order, each once the session is idle."""

    def __init__(
        self,
        host: CaseHost,
        recording: Recording,
        cassette: CassetteModel,
        timeout: float,
        *,
        live: bool,
    ) -> None:
        self.host = host
        self.runtime = host.runtime
        self.rec = recording
        self.cassette = cassette
        self.timeout = timeout
        self.live = live
        self.session_id: str | None = None
        self.token: str | None = None
        self.ids: dict[str, str] = {}  # recorded call id -> replayed call id
        self.noted: list[Divergence] = []
        self.cutting = False  # the running turn waits for the next message to cut it
        self.at = 0  # the recorded index of the input being played

    async def play(self) -> None:
        inputs = self.rec.inputs
        for i, item in enumerate(inputs):
            ahead = inputs[i + 1] if i + 1 < len(inputs) else None
            self.at = item.call.index if isinstance(item, DirectCall) else item.index
            if isinstance(item, Message):
                await self.send(item, cut_by_next=isinstance(ahead, Message))
            elif isinstance(item, Decision):
                await self.decide(item)
            elif isinstance(item, DirectCall):
                await self.direct(item)
        if self.session_id is not None:
            await self.settle()

    async def send(self, msg: Message, *, cut_by_next: bool) -> None:
        if self.session_id is not None and not self.cutting:
            await self.settle()
        self.cutting = False
        self.cassette.begin_turn(msg.turn)
        source = msg.source or "http"
        if self.session_id is None:
            mode: Any = "task" if self.rec.mode == "task" else "chat"
            accepted = await self.runtime.start_session(
                msg.text, principal=PRINCIPAL, source=source, mode=mode
            )
            self.session_id = accepted.session_id
        else:
            assert self.token is not None
            accepted = await self.runtime.follow_up(
                self.session_id, self.token, msg.text, principal=PRINCIPAL, source=source
            )
        self.token = accepted.continuation_token
        if msg.turn is not None and msg.turn.interrupted:
            await self.until_cut_point()
            if cut_by_next:
                self.cutting = True  # the next message interrupts it, as recorded
            else:
                await self.runtime.stop(self.session_id, principal=PRINCIPAL)

    async def until_cut_point(self) -> None:
        """Wait until the replayed turn reaches the step the recording was cut in (or
        ends: a live model may answer sooner)."""
        assert self.session_id is not None
        blocked = asyncio.ensure_future(self.cassette.blocked.wait())
        idle = asyncio.ensure_future(self.host.settle(self.session_id, timeout=self.timeout))
        try:
            await asyncio.wait({blocked, idle}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (blocked, idle):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def settle(self) -> None:
        """Wait until the session is idle; approve calls that park only in the replay (the
        recording ran them at once, so the replay goes on as it did)."""
        assert self.session_id is not None
        while True:
            await self.host.settle(self.session_id, timeout=self.timeout)
            await self.host.wait_unleased(self.session_id, timeout=self.timeout)
            pending = await self.runtime.approvals(self.session_id, principal=PRINCIPAL)
            new = [p for p in pending if not self._recorded_parked(p.call_id)]
            if not new:
                return
            for p in new:
                await self.runtime.resolve_approval(
                    self.session_id, p.call_id, "approve", principal=PRINCIPAL
                )

    def _recorded_parked(self, replay_id: str) -> bool:
        recorded = next((r for r, v in self.ids.items() if v == replay_id), replay_id)
        call = self.rec.calls.get(recorded)
        return call is not None and call.approval_index is not None

    async def decide(self, d: Decision) -> None:
        assert self.session_id is not None
        await self.settle()
        replay_id = self.ids.get(d.call_id, d.call_id)
        pending = await self.runtime.approvals(self.session_id, principal=PRINCIPAL)
        if self.live and all(p.call_id != replay_id for p in pending):
            recorded = self.rec.calls.get(d.call_id)
            same = [p for p in pending if recorded and p.tool_name == recorded.tool_name]
            if same:
                replay_id = self.ids[d.call_id] = same[0].call_id
        if any(p.call_id == replay_id for p in pending):
            decision: Any = "approve" if d.decision == "approve" else "deny"
            await self.runtime.resolve_approval(
                self.session_id, replay_id, decision, principal=PRINCIPAL
            )
        # (A call that no longer parks is reported from the events: approval_removed.)

    async def direct(self, item: DirectCall) -> None:
        c = item.call
        assert self.session_id is not None
        await self.settle()
        try:
            out = await self.runtime.call_tool(
                c.tool_name, c.arguments, principal=PRINCIPAL, session_id=self.session_id
            )
        except NotFound:
            why = f"tool {c.tool_name!r} is not in the new bundle (a direct call)"
            self.noted.append(Divergence(c.index, "tool_missing", why, c.tool_name, c.call_id))
            return
        except BadRequest as exc:
            why = f"the new bundle refuses the recorded direct call: {exc}"
            kind = "schema_rejected" if exc.code == "invalid_input" else "tool_missing"
            self.noted.append(Divergence(c.index, kind, why, c.tool_name, c.call_id))
            return
        except AgentkitError as exc:
            self.noted.append(
                Divergence(c.index, "turn_outcome", f"direct call refused: {exc}", c.tool_name)
            )
            return
        self.ids[c.call_id] = out.call_id
