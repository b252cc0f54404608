"""Thin commands: each parses flags and calls a stage of kapply; none holds logic.

Importing the CLI first keeps the compiled methods of dataclasses between runs (`kapply.cli.methods_cache`): a
short command's start-up is mostly creating the classes of the modules it imports.
"""

from kapply.cli.methods_cache import install

install()
