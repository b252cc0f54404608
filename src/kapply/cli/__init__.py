"""Thin commands: each parses flags and calls a stage of kapply; none holds logic."""
