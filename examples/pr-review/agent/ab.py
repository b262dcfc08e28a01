from agentkit import define_ab, variant

experiment = define_ab(
    name="review-style",
    description="Do terse reviews get approved as often as detailed ones?",
    variants={
        "detailed": variant(weight=1),
        "terse": variant(weight=1, instructions="Answer in at most two bullet points."),
    },
)
