"""Wire protocols other software already speaks, as thin translations of our event stream.

Each module here turns a session's recorded events into one protocol's events and knows
nothing of HTTP; the routes that mount them (`server.protocol_routes`) run the auth chain
and call the `AgentService`, like every other route.
"""
