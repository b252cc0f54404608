"""Reading a manifest from an HTTP(S) URL, as kapp's `-f https://...` does: a GET that follows redirects (and the
proxy environment variables), whose body is the file. An answer other than 2xx, or a request that fails, is an error
naming the URL, worded as kapp (Go's net/http) words it:

    Requesting URL 'https://example.com/x.yml': 404 Not Found
    Requesting URL 'http://127.0.0.1:1/x.yml':
      Get "http://127.0.0.1:1/x.yml": dial tcp 127.0.0.1:1: connect: connection refused

Beyond kapp: a server that stops answering fails the read after TIMEOUT seconds (Go's http.Get waits for ever), and a
body larger than MAX_BYTES is refused rather than exhausting memory.
"""

from __future__ import annotations

import errno
import socket
import ssl
from urllib.parse import urlsplit

from kapply.errors import ManifestError

SCHEMES = ("http://", "https://")
TIMEOUT = 60.0  # seconds without progress (connecting, or between reads)
MAX_BYTES = 256 * 1024 * 1024


def is_url(path: str) -> bool:
    """kapp's test: a `-f` value starting with `http://` or `https://` is fetched."""
    return path.startswith(SCHEMES)


def source(url: str) -> str:
    """How kapp names a document's origin: `HTTP URL '<url>'` (then ` doc N`)."""
    return f"HTTP URL '{url}'"


def _host_port(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    default = "443" if parts.scheme == "https" else "80"
    return host, str(port) if port is not None else default


def _reason(url: str, error: BaseException) -> str:
    """What went wrong, as Go's `Get "<url>": <error>`."""
    host, port = _host_port(url)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(error, socket.gaierror):
        text = f"dial tcp: lookup {host}: no such host"
    elif isinstance(error, ConnectionRefusedError) or getattr(error, "errno", None) == errno.ECONNREFUSED:
        text = f"dial tcp {address}: connect: connection refused"
    elif isinstance(error, TimeoutError | socket.timeout):
        text = "net/http: timeout awaiting response headers"
    elif isinstance(error, ssl.SSLCertVerificationError):
        text = f"tls: failed to verify certificate: {error.verify_message or error}"
    elif isinstance(error, ssl.SSLError) and "WRONG_VERSION_NUMBER" in str(error):
        text = "tls: first record does not look like a TLS handshake"
    else:
        text = str(getattr(error, "strerror", None) or error) or type(error).__name__
    return f'Get "{url}": {text}'


def fetch(url: str) -> bytes:
    """The body of a GET of `url`; ManifestError when the request fails or the answer is not 2xx.

    urllib.request (and http.client, email) is imported here, by the deploys that read a URL: ~17 ms of start-up
    that every other deploy, which imports this module to tell a URL from a path, would pay (bench/why.md)."""
    import urllib.error
    import urllib.request
    from http.client import HTTPException

    prefix = f"Requesting URL '{url}'"
    request = urllib.request.Request(url, headers={"User-Agent": "kapply"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 (only http(s), see is_url)
            body: bytes = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as e:
        raise ManifestError(f"{prefix}: {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        reason = e.reason if isinstance(e.reason, BaseException) else OSError(str(e.reason))
        raise ManifestError(f"{prefix}:\n  {_reason(url, reason)}") from None
    except (OSError, HTTPException, ValueError) as e:
        raise ManifestError(f"{prefix}:\n  {_reason(url, e)}") from None
    if len(body) > MAX_BYTES:
        raise ManifestError(f"Reading URL '{url}': larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return body
