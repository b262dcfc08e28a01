"""Enrollment at session creation, stickiness, weights, and what a variant changes."""

from __future__ import annotations

from collections import Counter

from agentkit.authoring.ab import define_ab, variant
from agentkit.models.base import Model, ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.sessions import Principal

from .conftest import RuntimeFactory, settle

ALICE = Principal("alice")
BOB = Principal("bob")
HAIKU = "anthropic:claude-haiku-4-5"

EXPERIMENTS = {
    "agent/ab.py": f"""
        from agentkit import define_ab, variant
        ab = define_ab(
            name="tone",
            variants={{
                "control": variant(),
                "concise": variant(instructions="Answer in one sentence.", model="{HAIKU}"),
            }},
        )
    """,
    "agent/ab/tools.py": """
        from agentkit import define_ab, variant
        ab = define_ab(
            sticky="principal",
            variants={
                "control": variant(),
                "narrow": variant(deny_tools=["shout"], max_steps=2),
            },
        )
    """,
}


def test_weights_hold_over_2000_assignments() -> None:
    ab = define_ab(variants={"a": variant(weight=1), "b": variant(weight=3)})
    counts = Counter(ab.assign("exp", f"ses_{i:05d}") for i in range(2000))
    # 500 expected in "a"; the binomial standard deviation is about 19.4: allow 4 of them.
    assert abs(counts["a"] - 500) < 78, counts
    assert counts["a"] + counts["b"] == 2000
    # Deterministic: the same key always lands in the same arm.
    assert all(
        ab.assign("exp", f"ses_{i:05d}") == ab.assign("exp", f"ses_{i:05d}") for i in range(50)
    )
    # A paused arm's share goes to the control arm (here "a", the first by name).
    paused = Counter(ab.assign("exp", f"ses_{i:05d}", paused=("b",)) for i in range(200))
    assert paused == {"a": 200}


def test_assignment_does_not_depend_on_the_order_variants_are_declared_in() -> None:
    # Editing ab.py to reorder its variants must not move any session to another arm.
    arms = {"control": variant(weight=1), "brief": variant(weight=2), "warm": variant(weight=3)}
    forward = define_ab(variants=arms)
    backward = define_ab(variants=dict(reversed(list(arms.items()))))
    shuffled = define_ab(variants={k: arms[k] for k in ("brief", "control", "warm")})
    keys = [f"ses_{i:05d}" for i in range(600)]
    first = [forward.assign("exp", k) for k in keys]
    assert first == [backward.assign("exp", k) for k in keys]
    assert first == [shuffled.assign("exp", k) for k in keys]
    assert set(first) == {"control", "brief", "warm"}


class Models:
    """One scripted model per model id; every request is kept with the id it went to."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ModelRequest]] = []

    def __call__(self, model_id: str | None) -> Model:
        mid = model_id or "scripted"
        parent = self

        class Recording(ScriptedModel):
            async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
                parent.seen.append((mid, request))
                async for chunk in super().stream(request):
                    yield chunk

        return Recording([Step.respond(lambda r: Step.text("ok"))] * 50, model_id=mid)


async def test_sessions_are_enrolled_after_session_started(make_runtime: RuntimeFactory) -> None:
    models = Models()
    rt = make_runtime(EXPERIMENTS, models)
    defs = rt.experiments
    assert sorted(defs) == ["tone", "tools"]
    arms: Counter[str] = Counter()
    for i in range(16):
        who = ALICE if i % 2 else BOB
        before = len(models.seen)
        acc = await rt.start_session(f"hello {i}", principal=who)
        await settle(rt)
        events = await rt.store.read(acc.session_id)
        assert events[0].type == "session.started"
        assigned = [e.data for e in events[1:3]]
        assert [e.type for e in events[1:3]] == ["ab.assigned", "ab.assigned"]
        assert events[3].type == "message.received"
        tone = defs["tone"].assign("tone", acc.session_id)
        tools = defs["tools"].assign("tools", "principal:" + who.id)
        assert assigned == [
            {"experiment": "tone", "variant": tone},
            {"experiment": "tools", "variant": tools},
        ]
        arms[tone] += 1
        # What the variant changes reaches the model request.
        ((model_id, request),) = models.seen[before:]
        if tone == "concise":
            assert model_id == HAIKU
            assert request.system.endswith("Answer in one sentence.")
        else:
            assert model_id == "scripted"
            assert "Answer in one sentence." not in request.system
        names = {t.name for t in request.tools}
        assert ("shout" in names) == (tools == "control")
        assert "add" in names
    assert set(arms) == {"control", "concise"}  # 16 sessions reach both arms


async def test_principal_stickiness_across_sessions(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(EXPERIMENTS, Models())
    seen: dict[str, set[str]] = {"alice": set(), "bob": set()}
    for i in range(6):
        who = ALICE if i % 2 else BOB
        acc = await rt.start_session("hi", principal=who)
        events = await rt.store.read(acc.session_id)
        variant_of = {
            e.data["experiment"]: e.data["variant"] for e in events if e.type == "ab.assigned"
        }
        seen[who.id].add(variant_of["tools"])
    await settle(rt)
    assert all(len(v) == 1 for v in seen.values()), seen


async def test_tools_see_the_arms_and_max_steps_applies(make_runtime: RuntimeFactory) -> None:
    calls = [Step.tool_calls(call("add", {"a": 1, "b": 1})) for _ in range(3)]
    model = ScriptedModel([*calls, Step.text("done")] * 20)
    rt = make_runtime(EXPERIMENTS, lambda _id: model)
    for i in range(12):
        acc = await rt.start_session("add", principal=Principal(f"user{i}"))
        await settle(rt)
        events = await rt.store.read(acc.session_id)
        arms = {e.data["experiment"]: e.data["variant"] for e in events if e.type == "ab.assigned"}
        if arms["tools"] == "narrow":
            break
    result = next(e.data for e in events if e.type == "action.result")
    assert result["result"]["abs"] == arms
    # The "narrow" arm allows 2 steps: three tool steps cannot finish.
    end = events[-2]
    assert end.type == "turn.failed" and "max_steps (2)" in end.data["error"]


async def test_the_arm_applies_to_every_turn_of_the_session(make_runtime: RuntimeFactory) -> None:
    models = Models()
    rt = make_runtime(EXPERIMENTS, models)
    for i in range(40):  # find a session in the concise arm
        acc = await rt.start_session(f"hello {i}", principal=ALICE)
        await settle(rt)
        if rt.experiments["tone"].assign("tone", acc.session_id) == "concise":
            break
    else:
        raise AssertionError("no session reached the concise arm")
    before = len(models.seen)
    sid, token = acc.session_id, acc.continuation_token
    for text in ("and then?", "one more"):
        token = (await rt.follow_up(sid, token, text, principal=ALICE)).continuation_token
        await settle(rt)
    later = models.seen[before:]
    assert len(later) == 2
    for model_id, request in later:
        assert model_id == HAIKU and request.system.endswith("Answer in one sentence.")
    events = await rt.store.read(sid)
    assert sum(e.type == "ab.assigned" for e in events) == 2  # enrolled once, at creation
