"""Framework overhead per turn: one tool call, then a final answer, zero-latency model.

Ours runs with the file store (every event appended to `events.ndjson` before the turn moves
on) against pydantic-ai (`Agent` + `FunctionModel`), the OpenAI Agents SDK (a fake `Model`)
and Strands (a fake model provider), all in one event loop, interleaved in rounds so a slow
moment of the machine hits every framework alike. A framework that is not installed prints
a skip line, except Strands, the reference of the goals: when it is missing the bench
installs it (`pip install --target bench/.venv-bench strands-agents`, put at the end of
`sys.path` so the project's own packages win) or says plainly why it could not. Nothing is
asserted: read the ratios, printed beside the goals (issue 19): a follow-up turn on the
file store at most 0.5x Strands' in-memory turn, a new session with its first turn at most
0.8x. Each ratio is printed twice: of the medians, and paired (the median over rounds of
the ratio within a round), which a machine whose load changes between rounds disturbs less.

The follow-up rows time follow-ups only: ten per session, then the next session, begun
during setup (before, the row began every eleventh session itself, folding a new session's
file creations into a follow-up's figure). The new-session row creates a session's folder
and three files per turn: on a disk busy with other writes (or with the deletions of an
earlier run) a creation can cost several hundred microseconds instead of tens, and that
row moves with it. Leave a minute between runs.

The row `agentkit follow-up + read (file)` adds a client's read of the finished turn (from
the index it reached last, through `read_events`), and the bench prints that read's cost
paired by round, and the read timed alone (its median and p95): the paired difference is
two noisy figures subtracted, within +-50 us on a loaded machine, while the read itself
(an ownership check on the cached record, one `stat` of the events file and a slice of the
cached view: no parse, no lock, no fsync) takes a few tens of microseconds.

    python bench/bench_turn.py [--rounds 25] [--turns 20] [--only "memory,strands"] [--no-install]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from agentkit.events import Usage
from agentkit.models.base import (
    Finish,
    ModelChunk,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
)

Runner = Callable[[], Awaitable[None]]
PRECREATED = 0  # set from the command line: rounds * turns + 1
BENCH_SITE = Path(__file__).resolve().parent / ".venv-bench"
READS: list[float] = []  # seconds each client read of a finished turn took (timed alone)
GOALS = {
    "agentkit follow-up (file)": 0.5,
    "agentkit follow-up + read (file)": 0.5,
    "agentkit (file store)": 0.8,
}


def ensure_strands(install: bool) -> None:
    """Make `strands` importable: installed already, in the bench's own folder, or
    installed there now (its dependencies that the project has already are not used)."""
    if BENCH_SITE.is_dir() and str(BENCH_SITE) not in sys.path:
        sys.path.append(str(BENCH_SITE))
    try:
        importlib.import_module("strands")
        return
    except ImportError:
        pass
    if not install:
        print("strands is not installed (and --no-install): its comparison is skipped")
        return
    print(f"installing strands-agents into {BENCH_SITE.name}/ for the comparison ...")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--target", str(BENCH_SITE)]
    done = subprocess.run(
        [*pip, "strands-agents"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        print("could not install strands-agents; its comparison is skipped:", *tail, sep="\n  ")
        return
    if str(BENCH_SITE) not in sys.path:
        sys.path.append(str(BENCH_SITE))
    importlib.invalidate_caches()


def weather(city: str) -> dict[str, Any]:
    return {"city": city, "tempC": 21}


# ---- ours -----------------------------------------------------------------------------


class ZeroLatency:
    """A model that answers at once: one tool call, then the reply."""

    id = "bench"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        if isinstance(request.messages[-1], ToolResultMessage):
            yield TextDelta("It is 21C in Paris.")
            yield Finish("end_turn", Usage(input_tokens=10, output_tokens=5))
        else:
            yield ToolCallChunk(ToolCall("call_1", "get_weather", {"city": "Paris"}))
            yield Finish("tool_use", Usage(input_tokens=10, output_tokens=5))


def ours_project(
    tmp: Path, *, follow_up: bool = False, memory: bool = False, read_back: bool = False
) -> Path:
    """Where `setup_ours(tmp, ...)` writes its agent project (one folder per variant)."""
    return tmp / f"ours-{int(follow_up)}{int(memory)}{int(read_back)}"


async def setup_ours(
    tmp: Path, *, follow_up: bool = False, memory: bool = False, read_back: bool = False
) -> Runner:
    from agentkit.engine.dispatch import LocalDispatcher
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.project.bundle import AgentBundle
    from agentkit.sessions import Principal
    from agentkit.store.files import FileStore
    from agentkit.store.memory import MemoryStore

    project = ours_project(tmp, follow_up=follow_up, memory=memory, read_back=read_back)
    (project / "agent" / "tools").mkdir(parents=True)
    (project / "agent" / "instructions.md").write_text("You report the weather.\n")
    (project / "agent" / "tools" / "get_weather.py").write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel
            from agentkit import define_tool

            class WeatherInput(BaseModel):
                city: str

            @define_tool(description="Get the weather for a city.")
            async def get_weather(input: WeatherInput, ctx) -> dict:
                return {"city": input.city, "tempC": 21}
            """
        )
    )

    model = ZeroLatency()
    store: Any = MemoryStore() if memory else FileStore(project / ".agentkit")
    runtime = AgentRuntime(
        AgentBundle.discover(project),
        store,
        model_resolver=lambda _id: model,
        state_root=project / ".agentkit",
    )
    dispatcher = runtime.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    alice = Principal("bench")

    session: list[tuple[str, str]] = []  # (session id, token) of the current session
    seen: dict[str, int] = {}  # the next index a client reading each session asks for
    spare: list[tuple[str, str]] = []  # sessions begun in setup, for the follow-up row

    async def begin() -> tuple[str, str]:
        acc = await runtime.start_session("Weather in Paris?", principal=alice)
        await dispatcher.drain()
        return acc.session_id, acc.continuation_token

    async def new_session() -> None:
        session[:] = [await begin()]

    async def next_turn() -> None:
        # Ten follow-ups per session, so history stays about the size of a real
        # conversation; then the next session, begun in setup: this row times follow-ups
        # only (a new session with its first turn is the other row).
        if len(session) > 10:
            session[:] = [spare.pop()]
        sid, token = session[-1]
        acc = await runtime.follow_up(sid, token, "And tomorrow?", principal=alice)
        await dispatcher.drain()
        session.append((sid, acc.continuation_token))
        if read_back:
            # What a client does next: read the finished turn's events from the index it
            # reached last time (`GET /stream?startIndex=` less the HTTP), ownership check
            # included.
            began = time.perf_counter()
            events = await runtime.read_events(sid, principal=alice, start=seen.get(sid, 0))
            READS.append(time.perf_counter() - began)
            assert any(e.type == "turn.completed" for e in events)
            seen[sid] = events[-1].index + 1

    await new_session()
    events = await store.read(session[0][0])
    assert events[-2].type == "turn.completed", [e.type for e in events]
    if follow_up:
        spare.extend([await begin() for _ in range(PRECREATED // 10 + 2)])
    return next_turn if follow_up else new_session


# ---- pydantic-ai ----------------------------------------------------------------------


async def setup_pydantic_ai(tmp: Path) -> Runner:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"})])
        return ModelResponse(parts=[TextPart("It is 21C in Paris.")])

    agent = Agent(FunctionModel(respond), instructions="You report the weather.")

    @agent.tool_plain
    def get_weather(city: str) -> dict[str, Any]:
        """Get the weather for a city."""
        return weather(city)

    async def turn() -> None:
        result = await agent.run("Weather in Paris?")
        assert result.output == "It is 21C in Paris."

    return turn


# ---- OpenAI Agents SDK ----------------------------------------------------------------


async def setup_openai_agents(tmp: Path) -> Runner:
    from agents import Agent, Runner, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.run import RunConfig
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class FakeModel(Model):
        async def get_response(
            self, system_instructions: Any, input: Any, *a: Any, **k: Any
        ) -> Any:
            done = isinstance(input, list) and any(
                (i.get("type") if isinstance(i, dict) else None) == "function_call_output"
                for i in input
            )
            if not done:
                call = ResponseFunctionToolCall(
                    arguments=json.dumps({"city": "Paris"}),
                    call_id="call_1",
                    name="get_weather",
                    type="function_call",
                    id="fc_1",
                    status="completed",
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            text = ResponseOutputText(
                annotations=[], text="It is 21C in Paris.", type="output_text"
            )
            msg = ResponseOutputMessage(
                id="msg_1", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[msg], usage=Usage(), response_id=None)

        def stream_response(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return json.dumps(weather(city))

    agent = Agent(
        name="weather",
        instructions="You report the weather.",
        tools=[get_weather],
        model=FakeModel(),
    )
    config = RunConfig(tracing_disabled=True)

    async def turn() -> None:
        result = await Runner.run(agent, "Weather in Paris?", run_config=config)
        assert result.final_output == "It is 21C in Paris."

    return turn


# ---- Strands --------------------------------------------------------------------------


async def setup_strands(tmp: Path) -> Runner:
    from strands import Agent, tool
    from strands.models.model import Model

    class FakeModel(Model):
        def update_config(self, **config: Any) -> None:
            return None

        def get_config(self) -> Any:
            return {}

        def structured_output(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        async def stream(self, messages: Any, *a: Any, **k: Any) -> AsyncIterator[Any]:
            usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
            last = messages[-1]["content"]
            yield {"messageStart": {"role": "assistant"}}
            if any("toolResult" in block for block in last):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": "It is 21C in Paris."}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
            else:
                start = {"toolUse": {"toolUseId": "call_1", "name": "get_weather"}}
                yield {"contentBlockStart": {"start": start}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city": "Paris"}'}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
            yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}}

    @tool
    def get_weather(city: str) -> dict[str, Any]:
        """Get the weather for a city.

        Args:
            city: City name
        """
        return weather(city)

    agent = Agent(
        model=FakeModel(),
        tools=[get_weather],
        system_prompt="You report the weather.",
        callback_handler=None,
    )

    async def turn() -> None:
        agent.messages = []
        result = await agent.invoke_async("Weather in Paris?")
        assert "21C" in str(result)

    return turn


# ---- the baseline: no framework -------------------------------------------------------


async def setup_hand_loop(tmp: Path) -> Runner:
    async def turn() -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
        call = {"name": "get_weather", "arguments": {"city": "Paris"}}
        messages.append({"role": "assistant", "tool_calls": [call]})
        messages.append({"role": "tool", "content": json.dumps(weather("Paris"))})
        messages.append({"role": "assistant", "content": "It is 21C in Paris."})

    return turn


async def setup_ours_turn_only(tmp: Path) -> Runner:
    """Only `run_turn` is timed: sessions and their messages are recorded beforehand, as the
    API process does before it hands a turn to the turn runner."""
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.project.bundle import AgentBundle
    from agentkit.sessions import Principal
    from agentkit.store.files import FileStore

    await setup_ours(tmp / "seed")
    project = ours_project(tmp / "seed")
    queued: list[tuple[str, str]] = []

    class Hold:
        async def dispatch(self, session_id: str, turn_id: str) -> None:
            queued.append((session_id, turn_id))

    model = ZeroLatency()
    runtime = AgentRuntime(
        AgentBundle.discover(project),
        FileStore(tmp / "turn-only"),
        dispatcher=Hold(),
        model_resolver=lambda _id: model,
        state_root=tmp / "turn-only",
    )
    for _ in range(PRECREATED):
        await runtime.start_session("Weather in Paris?", principal=Principal("bench"))
    queued.reverse()

    async def turn() -> None:
        session_id, turn_id = queued.pop()
        await runtime.run_turn(session_id, turn_id)

    return turn


async def setup_ours_follow_up(tmp: Path) -> Runner:
    return await setup_ours(tmp, follow_up=True)


async def setup_ours_follow_up_read(tmp: Path) -> Runner:
    return await setup_ours(tmp, follow_up=True, read_back=True)


async def setup_ours_memory(tmp: Path) -> Runner:
    return await setup_ours(tmp, memory=True)


async def setup_ours_memory_follow_up(tmp: Path) -> Runner:
    return await setup_ours(tmp, follow_up=True, memory=True)


CONTENDERS: list[tuple[str, Callable[[Path], Awaitable[Runner]]]] = [
    ("agentkit (file store)", setup_ours),
    ("agentkit follow-up (file)", setup_ours_follow_up),
    ("agentkit follow-up + read (file)", setup_ours_follow_up_read),
    ("agentkit run_turn (file)", setup_ours_turn_only),
    ("agentkit (memory store)", setup_ours_memory),
    ("agentkit follow-up (memory)", setup_ours_memory_follow_up),
    ("pydantic-ai", setup_pydantic_ai),
    ("openai-agents", setup_openai_agents),
    ("strands", setup_strands),
    ("hand-written loop", setup_hand_loop),
]


async def main(rounds: int, turns: int, only: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        runners: dict[str, Runner] = {}
        for name, setup in CONTENDERS:
            if only is not None and not any(part in name for part in only.split(",")):
                continue
            try:
                runner = await setup(tmp)
                await runner()  # warm up (imports, caches)
            except ImportError as exc:
                print(f"skip {name}: not installed ({exc.name})")
                continue
            runners[name] = runner
        samples: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(rounds):
            for name, runner in runners.items():
                started = time.perf_counter()
                for _ in range(turns):
                    await runner()
                samples[name].append((time.perf_counter() - started) * 1000 / turns)
        medians = {name: statistics.median(v) for name, v in samples.items()}
        others = [v for n, v in medians.items() if not n.startswith(("agentkit", "hand"))]
        fastest = min(others) if others else None
        ours = medians.get("agentkit (file store)")
        print(f"{'framework':<34}{'ms/turn (median)':>18}{'min':>8}{'vs ours':>10}")
        for name, med in sorted(medians.items(), key=lambda kv: kv[1]):
            ratio = f"{med / ours:.2f}x" if ours else "-"
            print(f"{name:<34}{med:>18.3f}{min(samples[name]):>8.3f}{ratio:>10}")
        if fastest:
            for name, med in medians.items():
                if name.startswith("agentkit"):
                    print(f"{name} / fastest other framework: {med / fastest:.2f}")
        print_goals(medians, samples)


def print_goals(medians: dict[str, float], samples: dict[str, list[float]]) -> None:
    """Each goal's ratio two ways: of the medians, and the median of the ratios within a
    round (paired: both sides ran back to back, so a slow moment of the machine hits both;
    on a loaded machine this is the steadier figure)."""
    plain, read = "agentkit follow-up (file)", "agentkit follow-up + read (file)"
    if plain in samples and read in samples:
        extra = statistics.median(a - b for a, b in zip(samples[read], samples[plain], strict=True))
        print(f"a client's read of the finished turn: {extra * 1000:+.0f} us per turn (paired)")
    if READS:
        # Timed alone as well: the paired difference above is two noisy figures subtracted.
        ordered = sorted(READS)
        p95 = ordered[int(len(ordered) * 0.95)]
        print(
            f"the read alone: {statistics.median(ordered) * 1e6:.0f} us median,"
            f" {p95 * 1e6:.0f} us p95 ({len(ordered)} reads)"
        )
    strands = medians.get("strands")
    if not strands:
        return
    for name, goal in GOALS.items():
        if name not in medians:
            continue
        ratio = medians[name] / strands
        paired = statistics.median(
            a / b for a, b in zip(samples[name], samples["strands"], strict=True)
        )
        verdict = "met" if paired <= goal else "not met"
        print(
            f"{name} / strands: {ratio:.2f}x (paired by round {paired:.2f}x)"
            f"   goal <= {goal}x ({verdict})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument(
        "--only",
        help="run only the contenders whose name contains this (or, comma-separated, any of these)",
    )
    parser.add_argument("--no-install", action="store_true", help="never install strands")
    ns = parser.parse_args()
    ensure_strands(not ns.no_install)
    PRECREATED = ns.rounds * ns.turns + 1
    asyncio.run(main(ns.rounds, ns.turns, ns.only))
    sys.exit(0)
