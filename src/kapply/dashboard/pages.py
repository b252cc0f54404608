"""The dashboard's two HTML documents: the Apps list and one App's page. Each is a shell with its labels and empty
regions; the page's own script (static/dashboard.js) fills them from the server's JSON answers and server-sent
events, as text (never as HTML). The CSRF token travels in a <meta> element the script reads."""

from __future__ import annotations

import html

from kapply.dashboard.view import State

STATES = (
    State.SUCCEEDED,
    State.FAILED,
    State.RECONCILING,
    State.DELETING,
    State.DELETE_FAILED,
    State.PAUSED,
    State.CANCELED,
    State.UNKNOWN,
)


def _head(title: str, token: str, csrf: str) -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="kapply-csrf" content="{html.escape(csrf)}">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="/{token}/static/dashboard.css">
<script src="/{token}/static/dashboard.js" defer></script>
</head>
"""


def list_page(token: str, csrf: str) -> str:
    options = "".join(f'<option value="{s}">{s}</option>' for s in STATES)
    return (
        _head("kapply dashboard: Apps", token, csrf)
        + f"""<body data-page="list">
<header><nav><a href="/{token}/packages">Packages</a></nav><h1>Apps and PackageInstalls</h1>
<p id="live" role="status" aria-live="polite">connecting…</p></header>
<main>
<form id="filters" class="filters" role="search" aria-label="Filter the list">
<label for="f-namespace">Namespace</label><input id="f-namespace" name="namespace" autocomplete="off">
<label for="f-state">State</label><select id="f-state" name="state"><option value="">any</option>{options}</select>
<label for="f-label">Label</label><input id="f-label" name="label" placeholder="key or key=value" autocomplete="off">
</form>
<div id="hidden" class="hidden-note" role="note"></div>
<table id="apps" aria-describedby="live">
<caption class="visually-hidden">Apps and PackageInstalls</caption>
<thead><tr><th scope="col">Kind</th><th scope="col">Namespace</th><th scope="col">Name</th>
<th scope="col">State</th><th scope="col">Last deploy</th><th scope="col">Age</th><th scope="col">Drift policy</th>
<th scope="col">Drifted fields</th><th scope="col">Ghost diffs</th><th scope="col">Description</th></tr></thead>
<tbody></tbody>
</table>
<p id="empty" class="empty">No App or PackageInstall matches.</p>
</main>
</body>
</html>
"""
    )


def app_page(token: str, csrf: str) -> str:
    return (
        _head("kapply dashboard: App", token, csrf)
        + f"""<body data-page="app">
<header><p><a href="/{token}/">← All Apps</a></p><h1 id="title">App</h1>
<p id="live" role="status" aria-live="polite">loading…</p></header>
<main>
<section aria-labelledby="h-actions"><h2 id="h-actions">Actions</h2>
<div class="actions">
<button type="button" data-action="kick">Sync now</button>
<button type="button" data-action="pause">Pause</button>
<button type="button" data-action="resume">Resume</button>
</div>
<p id="action-result" role="status" aria-live="polite"></p>
<dialog id="confirm" aria-labelledby="confirm-text"><p id="confirm-text"></p>
<div class="actions"><button type="button" id="confirm-yes">Yes</button>
<button type="button" id="confirm-no" autofocus>No</button></div></dialog>
<dialog id="rollback" aria-labelledby="rollback-text"><p id="rollback-text"></p>
<pre id="rollback-diff" tabindex="0"></pre>
<p>An App that deploys this app (and the PackageInstall that made it) is paused first, so that it does not deploy its
own spec over the rollback.</p>
<div class="actions"><button type="button" id="rollback-yes">Roll back</button>
<button type="button" id="rollback-no" autofocus>Cancel</button></div></dialog>
<dialog id="install-rollback" aria-labelledby="install-rollback-text"><p id="install-rollback-text"></p>
<pre id="install-rollback-plan" tabindex="0"></pre>
<p>The install is paused while its values are written back, then resumed.</p>
<div class="actions"><button type="button" id="install-rollback-yes">Roll back</button>
<button type="button" id="install-rollback-no" autofocus>Cancel</button></div></dialog>
</section>
<section aria-labelledby="h-summary"><h2 id="h-summary">State</h2><dl id="summary"></dl>
<table id="conditions"><caption>Conditions</caption><thead><tr><th scope="col">Type</th><th scope="col">Status</th>
<th scope="col">Message</th></tr></thead><tbody></tbody></table></section>
<section aria-labelledby="h-drift"><h2 id="h-drift">Drifted fields</h2>
<table id="drift"><thead><tr><th scope="col">Resource</th><th scope="col">Field</th><th scope="col">Desired</th>
<th scope="col">Live</th><th scope="col">Written by</th></tr></thead><tbody></tbody></table></section>
<section aria-labelledby="h-ghosts"><h2 id="h-ghosts">Ghost diffs</h2>
<table id="ghosts"><thead><tr><th scope="col">Resource</th><th scope="col">Field</th><th scope="col">Desired</th>
<th scope="col">Live</th><th scope="col">Written by</th><th scope="col">Set back</th><th scope="col">First seen</th>
<th scope="col">Last seen</th></tr></thead><tbody></tbody></table>
<h3>Suggested rule</h3><pre id="suggested" tabindex="0"></pre>
<button type="button" id="copy-suggested">Copy the suggested rule</button></section>
<section aria-labelledby="h-output"><h2 id="h-output">Last deploy output</h2><div id="stages"></div></section>
<section aria-labelledby="h-tree"><h2 id="h-tree">Resources</h2><pre id="tree" tabindex="0"></pre></section>
<section aria-labelledby="h-events"><h2 id="h-events">Events</h2>
<table id="events"><thead><tr><th scope="col">Last seen</th><th scope="col">Type</th><th scope="col">Reason</th>
<th scope="col">Count</th><th scope="col">Message</th></tr></thead><tbody></tbody></table></section>
<section aria-labelledby="h-history"><h2 id="h-history">App changes</h2>
<table id="history"><thead><tr><th scope="col">Name</th><th scope="col">Started</th><th scope="col">Finished</th>
<th scope="col">Successful</th><th scope="col">Description</th><th scope="col">Diff (masked)</th>
<th scope="col">Roll back</th></tr></thead>
<tbody></tbody></table></section>
<section aria-labelledby="h-revisions" id="revisions-section" hidden><h2 id="h-revisions">Revisions</h2>
<table id="revisions"><thead><tr><th scope="col">Revision</th><th scope="col">Version</th>
<th scope="col">Created</th><th scope="col">Values digest</th><th scope="col">Roll back</th></tr></thead>
<tbody></tbody></table></section>
</main>
</body>
</html>
"""
    )


def packages_page(token: str, csrf: str) -> str:
    return (
        _head("kapply dashboard: packages", token, csrf)
        + f"""<body data-page="packages">
<header><p><a href="/{token}/">← All Apps</a></p><h1>Packages</h1>
<p id="live" role="status" aria-live="polite">loading…</p></header>
<main>
<div id="hidden" class="hidden-note" role="note"></div>
<section aria-labelledby="h-repositories"><h2 id="h-repositories">Repositories</h2>
<table id="repositories"><thead><tr><th scope="col">Namespace</th><th scope="col">Name</th><th scope="col">Source</th>
<th scope="col">State</th><th scope="col">Description</th></tr></thead><tbody></tbody></table></section>
<section aria-labelledby="h-packages"><h2 id="h-packages">Available packages</h2>
<table id="packages"><thead><tr><th scope="col">Namespace</th><th scope="col">Package</th>
<th scope="col">Versions</th></tr></thead><tbody></tbody></table></section>
<section aria-labelledby="h-installs"><h2 id="h-installs">Installs</h2>
<table id="installs"><thead><tr><th scope="col">Namespace</th><th scope="col">Name</th><th scope="col">Package</th>
<th scope="col">Constraints</th><th scope="col">Runs</th><th scope="col">Last attempted</th><th scope="col">State</th>
</tr></thead><tbody></tbody></table></section>
<p><button type="button" id="refresh">Refresh</button></p>
</main>
</body>
</html>
"""
    )
