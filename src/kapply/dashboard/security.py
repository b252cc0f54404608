"""The dashboard server's checks, as the diff UI's (kapply.ui.browser_server): only the server's own Host, only paths
under the run's random token, and a POST only from the page itself (its Origin, `Sec-Fetch-Site: same-origin`) with
the run's CSRF token in its `X-Kapply-CSRF` header (which a cross-site form cannot set). Answers are never cached and
carry a Content-Security-Policy that lets the page load only its own script and style and talk only to its server."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

HOST = "127.0.0.1"
CSRF_HEADER = "X-Kapply-CSRF"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def hosts(port: int) -> frozenset[str]:
    return frozenset({f"{HOST}:{port}", f"localhost:{port}"})


def equal(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(errors="replace"), expected.encode())


def split_path(path: str) -> tuple[str, str]:
    """`/<token>/<rest>` as (token, rest)."""
    _, token, rest = (path.split("/", 2) + ["", ""])[:3]
    return token, rest


def refusal(method: str, headers: Mapping[str, str], path: str, port: int, token: str, csrf: str) -> str:
    """Why a request is refused ("" when it is not): a wrong Host, a path without the token, a POST from elsewhere
    or without the CSRF token."""
    if headers.get("Host") not in hosts(port):
        return "wrong Host"
    if not equal(split_path(path)[0], token):
        return "this page needs the URL kapply printed"
    if method == "POST":
        origin = headers.get("Origin")
        if origin is None or origin not in {f"http://{host}" for host in hosts(port)}:
            return "not posted by this page"
        if headers.get("Sec-Fetch-Site", "same-origin") != "same-origin":
            return "not posted by this page"
        if not equal(headers.get(CSRF_HEADER, ""), csrf):
            return "missing or wrong CSRF token"
    return ""
