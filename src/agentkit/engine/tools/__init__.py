"""Tool calls: the tool table, running a call (threads, child processes), built-ins,
direct calls over the API, and the session workspace they run in."""
