"""Schedules (deploy-time cron) and reminders (runtime wakes bound to a conversation)."""
