"""Folds over a session's events: the conversation, cost, trajectory, daily use."""
