"""The turn engine: sessions, the turn loop, tools, approvals, skills, subagents, recovery.

`runtime.AgentRuntime` implements `service.AgentService`; `fanout.Fanout` and
`dispatch.Dispatcher` are the ports hosts plug into. See docs/engine.md.
"""
