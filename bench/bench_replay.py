"""Cold replay of a 10,000-event session on the file store, against a raw read of the file.

Each round times, one after another in this process (so a busy moment of the machine
hits all alike):

- the floor: `events.ndjson` read and split into lines;
- the store: a fresh `FileStore` (nothing cached, as after a restart) reading the session;
- the decoders the choice was made between, each building the same `Event`s: the standard
  library's `json` (what the store used before), `orjson`, and `msgspec` decoding straight
  into `Event` (what the store uses now).

Prints medians and each one's ratio to the floor beside the goal (the store ≤ 6x). A
decoder that is not installed prints a skip line. Nothing is asserted.

    python bench/bench_replay.py [--events 10000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentkit.events import Event, MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.files import FileStore

GOAL = 6.0


def as_array(data: bytes) -> bytes:
    end = data.rfind(b"\n")
    return b"[" + data[:end].replace(b"\n", b",") + b"]"


def build(raws: list[Any]) -> list[Event]:
    return [
        Event(r["type"], r["index"], r["sessionId"], r["at"], r.get("data") or {}, r.get("turnId"))
        for r in raws
    ]


def decoders() -> dict[str, Callable[[bytes], list[Event]]]:
    found: dict[str, Callable[[bytes], list[Event]]] = {
        "json (stdlib), before": lambda data: build(json.loads(as_array(data))),
    }
    try:
        import orjson

        found["orjson"] = lambda data: build(orjson.loads(as_array(data)))
    except ImportError:
        print("skip orjson: not installed")
    import msgspec

    typed = msgspec.json.Decoder(Event)
    found["msgspec, into Event"] = lambda data: typed.decode_lines(data)
    return found


async def main(count: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "state"
        store = FileStore(root)
        sid = new_session_id()
        await store.create_session(SessionRecord(id=sid, principal="bench"))
        for start in range(0, count, 100):
            batch = range(start, min(count, start + 100))
            text = "lorem ipsum " * 8  # about the size of a streamed reply delta
            await store.append(
                sid,
                [draft(MessageAppended(text=f"delta {i} {text}"), turn_id="turn_1") for i in batch],
            )
        await store.close()
        path = root / "sessions" / sid / "events.ndjson"

        async def cold_store() -> float:
            fresh = FileStore(root)  # nothing cached, as after a restart
            started = time.perf_counter()
            events = await fresh.read(sid)
            elapsed = time.perf_counter() - started
            assert len(events) == count
            await fresh.close()
            return elapsed

        samples: dict[str, list[float]] = {"raw read (floor)": [], "FileStore, cold": []}
        decode = decoders()
        samples.update({name: [] for name in decode})
        for _ in range(rounds):
            started = time.perf_counter()
            assert path.read_bytes().splitlines()
            samples["raw read (floor)"].append(time.perf_counter() - started)
            samples["FileStore, cold"].append(await cold_store())
            for name, fn in decode.items():
                started = time.perf_counter()
                assert len(fn(path.read_bytes())) == count
                samples[name].append(time.perf_counter() - started)
        floor = statistics.median(samples["raw read (floor)"])
        best = min(samples["raw read (floor)"])
        print(f"replay of {count} events, {rounds} interleaved rounds")
        print(f"{'':<24}{'median ms':>10}{'x floor':>9}{'min ms':>9}{'x floor':>9}")
        for name, values in samples.items():
            med, low = statistics.median(values), min(values)
            goal = f"   goal <= {GOAL:.0f}x" if name == "FileStore, cold" else ""
            print(
                f"{name:<24}{med * 1000:>10.2f}{med / floor:>8.1f}x"
                f"{low * 1000:>9.2f}{low / best:>8.1f}x{goal}"
            )
        before = statistics.median(samples["json (stdlib), before"])
        ours = statistics.median(samples["FileStore, cold"])
        print(f"the store's cold replay is {before / ours:.1f}x faster than the stdlib decoding")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    ns = parser.parse_args()
    asyncio.run(main(ns.events, ns.rounds))
