import logging

from agentkit import define_ab, variant

log = logging.getLogger("agentkit.agent.pr-review.ab")


def on_sample(sample: dict) -> None:
    # Observe-only: called once per finished turn of an enrolled session. Forward the
    # metrics to your own system here; an exception is logged and changes nothing.
    log.info("%s/%s: %s", sample["experiment"], sample["variant"], sample["metrics"])


experiment = define_ab(
    name="review-style",
    description="Do terse reviews get approved as often as detailed ones?",
    control="detailed",
    variants={
        "detailed": variant(weight=1),
        "terse": variant(weight=1, instructions="Answer in at most two bullet points."),
    },
    # Pause "terse" for new sessions if it is surely over either limit.
    guardrails={"costUsd": 0.25, "failureRate": 0.2},
    on_sample=on_sample,
)
