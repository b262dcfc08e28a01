"""Cron in its two dialects: standard 5-field UTC cron (with the short durations and
instants timers use) and its EventBridge Scheduler form. Pure functions, below the stores
and the project, so both can check a schedule without the scheduling runtime."""
