"""Measurements (not run by `make test`): the side-by-side benchmark of kapp and kapply (`sidebyside.py`) and its
helper modules, plus one-off measurement scripts."""
