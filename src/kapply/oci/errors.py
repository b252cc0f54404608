"""The one error kapply.oci raises."""

from __future__ import annotations

from kapply.errors import KapplyError


class OciError(KapplyError):
    """Pulling from an OCI registry failed, or what it served was refused. The message names the image reference and
    what went wrong; it never holds credentials, and of what the registry served at most an error code or a
    (quoted, shortened) file name in a layer, never a file's content."""


def shown(text: str, limit: int = 120) -> str:
    """Text from the registry or a layer (a file name, an error code), quoted for a message: escapes for anything
    unprintable (a name can hold terminal escapes), shortened to `limit` characters."""
    quoted = repr(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 4] + "...'"
