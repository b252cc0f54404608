"""Diff: change calculation (ops, rebasing, last-applied) and its rendering as text."""
