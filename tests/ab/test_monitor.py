"""Samples as turns finish, observe-only `on_sample`, and a guardrail pausing a costly arm."""

from __future__ import annotations

import logging

import pytest

from agentkit.ab.fold import fold_session
from agentkit.ab.monitor import AbMonitor
from agentkit.ab.report import Aggregate
from agentkit.engine.arms import experiments
from agentkit.events import Usage
from agentkit.models.base import Model
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.sessions import Principal

from .conftest import RuntimeFactory, agent_py, settle

PRICES = {
    "cheap": {"input": 0.1, "output": 0.1},
    "pricey": {"input": 100.0, "output": 100.0},
}
FILES = {
    "agent/agent.py": agent_py(model="anthropic:cheap", prices=PRICES),
    "agent/ab.py": """
        from agentkit import define_ab, variant

        SAMPLES = []

        def collect(sample):
            SAMPLES.append(sample)
            raise RuntimeError("a broken collector must not matter")

        ab = define_ab(
            name="model",
            variants={"control": variant(), "pricey": variant(model="anthropic:pricey")},
            guardrails={"costUsd": 0.01},
            min_samples=5,
            on_sample=collect,
        )
    """,
}


def models(model_id: str | None) -> Model:
    name = (model_id or "anthropic:cheap").split(":")[1]
    usage = Usage(input_tokens=100, output_tokens=10)  # $0.011 pricey, $0.000011 cheap
    return ScriptedModel([Step.text("ok", usage=usage)] * 100, model_id=name)


async def test_a_guardrail_pauses_a_costly_arm(
    make_runtime: RuntimeFactory, caplog: pytest.LogCaptureFixture
) -> None:
    rt = make_runtime(FILES, models)
    monitor = AbMonitor(experiments(rt.manifest, rt.bundle))
    rt.fanout = monitor
    monitor.attach(rt)
    await monitor.load()
    caplog.set_level(logging.WARNING, logger="agentkit.ab")
    sessions: list[str] = []
    paused_in: str | None = None
    for i in range(60):
        acc = await rt.start_session(f"q{i}", principal=Principal(f"u{i}"))
        await settle(rt)
        await monitor.idle()
        sessions.append(acc.session_id)
        if monitor.paused("model"):
            paused_in = acc.session_id
            break
    assert paused_in is not None, "the costly arm was never paused"
    events = await rt.store.read(paused_in)
    pause = [e.data for e in events if e.type == "ab.paused"]
    assert pause and pause[0]["variant"] == "pricey" and "costUsd" in pause[0]["reason"]
    assert any("variant pricey paused" in r.getMessage() for r in caplog.records)
    # Exactly min_samples turns of the pricey arm were needed (its cost never varies).
    folds = [fold_session(s, await rt.store.read(s)) for s in sessions]
    agg = Aggregate.of(folds)
    assert agg.arms["model"]["pricey"].turns == 5
    # on_sample saw every finished turn, and its exception changed nothing.
    ab = rt.experiments["model"]
    assert ab.on_sample is not None
    samples = ab.on_sample.__globals__["SAMPLES"]
    assert len(samples) == len(sessions)
    # Each arm's samples, as the folds count its turns (assignment is random per session,
    # so the first five may all be pricey: control then has none).
    variants = [s["variant"] for s in samples]
    assert variants.count("pricey") == 5
    assert variants.count("control") == len(sessions) - 5
    assert all(s["experiment"] == "model" for s in samples)
    # New sessions all go to control now; enrolled ones keep their arm.
    for i in range(20):
        acc = await rt.start_session("after", principal=Principal(f"late{i}"))
        arms = [
            e.data["variant"]
            for e in await rt.store.read(acc.session_id)
            if e.type == "ab.assigned"
        ]
        assert arms == ["control"]
    await settle(rt)
    # A new monitor (as after a restart) folds the pause back from the streams.
    await monitor.close()
    again = AbMonitor(rt.experiments)
    again.attach(rt)
    await again.load()
    assert list(again.paused("model")) == ["pricey"]
