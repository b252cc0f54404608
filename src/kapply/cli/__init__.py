"""Thin commands: each parses flags and calls a stage of kapply; none holds logic.

Importing the CLI first keeps the compiled methods of dataclasses (`kapply.cli.methods_cache`) and compiled regular
expressions (`kapply.cli.pattern_cache`) between runs: a short command's start-up is mostly creating the classes and
patterns of the modules it imports.
"""

from kapply.cli import methods_cache, pattern_cache

pattern_cache.install()
methods_cache.install()
