from agentkit import define_agent

# No model: the host default applies (the offline `test` model unless configured).
agent = define_agent(
    max_steps=15,
    # Ask before a turn spends past $0.50 or 200k tokens, or a session past $5; each
    # caller of the HTTP API may spend $20 a day (then 429 until midnight UTC).
    budget={
        "turn_usd": 0.50,
        "turn_tokens": 200_000,
        "session_usd": 5.0,
        "principal_daily_usd": 20.0,
    },
)
