"""Changes between two sets of manifests, with no cluster and no rules (`tools diff`)."""

from __future__ import annotations

from collections.abc import Sequence

from kapply.config.config import Config
from kapply.diff.change import Change, calculate
from kapply.objects import Document, key_of


def local_changes(new: Sequence[Document], existing: Sequence[Document]) -> list[Change]:
    """One change per resource of `new` (against its namesake in `existing`), then deletes for the rest."""
    config = Config()
    old_by_key = {key_of(d.obj): d.obj for d in existing}
    new_keys = {key_of(d.obj) for d in new}
    changes = [
        calculate(d.obj, old_by_key.get(key_of(d.obj)), config, origin=d.origin, against_last_applied=False)
        for d in new
    ]
    changes += [calculate(None, obj, config) for key, obj in old_by_key.items() if key not in new_keys]
    return changes
