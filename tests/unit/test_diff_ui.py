"""The page of `--diff-ui-alpha` (kapply.ui.browser) and its server (kapply.ui.browser_server), without a cluster:
plans come from `tools diff`'s offline changes, the server runs on 127.0.0.1 and is asked with aiohttp."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from html.parser import HTMLParser
from typing import Any

import aiohttp
import pytest

from kapply.apply.planning import offline_changes, order
from kapply.apply.view import change_set_text
from kapply.config.default import default_config
from kapply.diff.attribution import OutsideField
from kapply.diff.fields import FieldPath
from kapply.diff.ghost import FieldDrift
from kapply.diff.local import local_changes
from kapply.diff.render import DiffFormat
from kapply.objects import Document, Obj
from kapply.ui import browser_server
from kapply.ui.browser import CSP, CSS, Review, Stage, inert, line_class, page, review
from kapply.ui.browser_server import Decision, ReviewServer, serving

TOKEN = "t0k3n-for-tests_0123456789abcdefghijklmnopq"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
SECRET_OLD, SECRET_NEW = "old-password-value", "new-password-value"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def configmap(name: str, namespace: str = "ns", **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def secret(value: str) -> Obj:
    meta = {"name": "creds", "namespace": "ns"}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"password": b64(value)}}


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def review_of(
    new: Sequence[Obj], existing: Sequence[Obj] = (), *, asks: bool = True, outside: Sequence[OutsideField] = ()
) -> Review:
    config = default_config()
    docs = [Document(o, f"resource {i}") for i, o in enumerate(new)]
    found = offline_changes(local_changes(docs, [Document(o, "existing") for o in existing]))
    hunks = change_set_text(found, config, DiffFormat(mask=True)).hunks
    return review(
        "deploy",
        "Deploy app 'web' (namespace: ns)",
        "Target cluster 'https://127.0.0.1:6443' (nodes: node-0)",
        found,
        hunks,
        order(found, config),
        asks=asks,
        config=config,
        outside=outside,
    )


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def tags_of(html: str) -> Tags:
    parser = Tags()
    parser.feed(html)
    return parser


PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "b", "code", "section", "form"}
PAGE_TAGS |= {"button", "table", "thead", "tbody", "tr", "th", "td", "div", "ul", "li", "pre", "span"}
PAGE_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "class", "id", "method", "action", "type"}

# Rendering.


def test_inert_text_escapes_markup_and_quotes():
    assert inert("<script>alert('x')</script>") == "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"
    assert inert('a"b&c') == "a&quot;b&amp;c"


def test_inert_text_shows_terminal_escapes_bidi_overrides_and_line_separators_as_visible_marks():
    shown = inert("red\x1b[31m\u202eevil\x07\r\u2028\x85x")
    assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown and "\r" not in shown
    assert "\u2028" not in shown and "\x85" not in shown
    marks = re.findall(r'<span class="ctl">([^<]*)</span>', shown)
    assert marks == ["\\x1b", "\\u202e", "\\x07", "\\x0d", "\\u2028", "\\x85"]


def test_newlines_and_tabs_stay_as_they_are():
    assert inert("a\n\tb") == "a\n\tb"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("      3 +   a: 1", "add"),
        ("  2     -   a: 0", "del"),
        ("  1,  1   data:", "same"),
        ("  4,  5   - item", "same"),  # a YAML list item on a context line
        ("  ...", "same"),
        ("+   a: 1", "add"),  # without line numbers
        ("-   a: 0", "del"),
        ("    - item", "same"),
        (" 1001     - x", "del"),
        ("   1002 + - item", "add"),
    ],
)
def test_diff_lines_are_marked_by_the_terminals_markers_not_by_their_text(line: str, kind: str):
    assert line_class(line) == kind


def test_the_page_shows_the_changes_table_as_the_terminal_does():
    shown = review_of([configmap("web", a="2"), configmap("db", a="1")], [configmap("web", a="1")])
    assert [c.title for c in shown.table.columns][:5] == ["Namespace", "Name", "Kind", "Age", "Op"]
    assert [(row[1], row[4]) for row in shown.table.rows] == [("db", "create"), ("web", "update")]
    html = page(shown, TOKEN)
    assert "<th>Op st.</th>" in html
    assert "<td>db</td><td>ConfigMap</td><td>-</td><td>create</td>" in html
    assert "Op:      1 create, 0 delete, 1 update, 0 noop, 0 exists" in html


def test_each_change_has_its_diff_with_added_and_removed_lines_marked():
    html = page(review_of([configmap("web", a="2")], [configmap("web", a="1")]), TOKEN)
    assert "<h3>@@ update configmap/web (v1) namespace: ns @@</h3>" in html
    assert '<span class="del">  2     -   a: &quot;1&quot;</span>' in html
    assert '<span class="add">      2 +   a: &quot;2&quot;</span>' in html


def test_changes_are_listed_in_apply_order_with_what_each_waits_for():
    shown = review_of([configmap("web", namespace="apps"), namespace("apps")])
    assert [c.header for c in shown.changes] == [
        "@@ create namespace/apps (v1) cluster @@",
        "@@ create configmap/web (v1) namespace: apps @@",
    ]
    assert shown.changes[0].waits_for == ()
    assert shown.changes[1].waits_for == ("namespace/apps (v1) cluster",)
    assert "Waits for:</p><ul><li>namespace/apps (v1) cluster</li></ul>" in page(shown, TOKEN)


def test_secret_values_never_reach_the_page_in_the_diff_nor_in_the_field_owner_note():
    new, old = secret(SECRET_NEW), secret(SECRET_OLD)
    found = offline_changes(local_changes([Document(new, "r")], [Document(old, "e")]))
    field = FieldDrift(FieldPath(("data", "password")), b64(SECRET_NEW), b64(SECRET_OLD), None)
    outside = (OutsideField(found[0].change, field, "kubectl-edit (Update)"),)
    html = page(review_of([new], [old], outside=outside), TOKEN)
    for value in (SECRET_OLD, SECRET_NEW, b64(SECRET_OLD), b64(SECRET_NEW)):
        assert value not in html
    assert "&lt;-- value not shown (#1)" in html and "&lt;-- value not shown (#2)" in html
    assert "data.password: desired &lt;-- value not shown, live &lt;-- value not shown, written by kubectl-edit" in html


def test_the_field_manager_of_a_field_someone_else_wrote_is_shown_under_its_change():
    new, old = configmap("web", a="1"), configmap("web", a="2")
    found = offline_changes(local_changes([Document(new, "r")], [Document(old, "e")]))
    field = FieldDrift(FieldPath(("data", "a")), "1", "2", None)
    shown = review_of([new, configmap("other")], [old], outside=(OutsideField(found[0].change, field, "kubectl"),))
    web = next(c for c in shown.changes if "configmap/web" in c.header)
    assert web.outside == ('data.a: desired "1", live "2", written by kubectl',)
    html = page(shown, TOKEN)
    assert "Fields last written by others: this deploy sets them back to the desired value" in html
    assert "data.a: desired &quot;1&quot;, live &quot;2&quot;, written by kubectl" in html


def test_hostile_names_and_values_render_as_text_and_add_no_element_or_attribute():
    name = "x<script>alert(1)\x1b[31m\u202e"
    hostile = configmap(name, k='<img src=x onerror=alert(1)>" onclick="x')
    html = page(review_of([hostile]), TOKEN, Stage.FAILED, failure="<b>boom</b>\x1b[2J")
    parsed = tags_of(html)
    assert parsed.tags <= PAGE_TAGS and "script" not in parsed.tags and "img" not in parsed.tags
    assert parsed.attributes <= PAGE_ATTRIBUTES
    assert "\x1b" not in html and "\u202e" not in html
    assert "x&lt;script&gt;alert(1)" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;b&gt;boom&lt;/b&gt;" in html


def test_asking_pages_post_apply_and_cancel_to_the_tokens_paths():
    html = page(review_of([configmap("web")]), TOKEN)
    assert f'<form method="post" action="/{TOKEN}/apply"><button type="submit" class="apply">Apply</button>' in html
    assert f'action="/{TOKEN}/cancel"' in html and "/close" not in html
    assert 'http-equiv="refresh"' not in html


def test_a_page_that_asks_nothing_only_closes():
    html = page(review_of([configmap("web")], asks=False), TOKEN)
    assert f'action="/{TOKEN}/close"' in html and "/apply" not in html and "/cancel" not in html


@pytest.mark.parametrize(
    ("stage", "text"),
    [
        (Stage.APPLIED, "Applied: the deploy finished."),
        (Stage.CANCELLED, "Cancelled: nothing was applied."),
        (Stage.CLOSED, "Closed."),
        (Stage.FAILED, "Failed: the deploy stopped with an error: it broke"),
    ],
)
def test_once_decided_the_page_shows_the_outcome_without_buttons_or_refresh(stage: Stage, text: str):
    html = page(review_of([configmap("web")]), TOKEN, stage, failure="it broke")
    assert text in html
    assert "<form" not in html and 'http-equiv="refresh"' not in html


def test_while_the_run_goes_on_the_page_reloads_itself_without_script():
    html = page(review_of([configmap("web")]), TOKEN, Stage.APPLYING)
    assert f'<meta http-equiv="refresh" content="1; url=/{TOKEN}/">' in html
    assert "<form" not in html and "<script" not in html


def test_the_content_security_policy_allows_exactly_the_pages_own_stylesheet():
    html = page(review_of([configmap("web")]), TOKEN)
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    assert style is not None and style.group(1) == CSS
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in CSP
    assert "default-src 'none'" in CSP and "script-src" not in CSP and "form-action 'self'" in CSP


# The server.


def serve(
    body: Callable[[ReviewServer, aiohttp.ClientSession], Awaitable[Any]], *, asks: bool = True
) -> Any:  # the block's result
    async def main() -> Any:
        async with serving(review_of([configmap("web")], asks=asks)) as server, aiohttp.ClientSession() as http:
            return await body(server, http)

    return asyncio.run(main())


async def status_of(http: aiohttp.ClientSession, method: str, url: str, **headers: str) -> int:
    async with http.request(method, url, headers=headers, allow_redirects=False) as answer:
        await answer.read()
        return answer.status


def test_the_server_listens_on_loopback_on_a_port_the_system_chooses_with_a_fresh_token_per_run():
    async def urls(server: ReviewServer, http: aiohttp.ClientSession) -> str:
        return server.url

    first, second = serve(urls), serve(urls)
    pattern = re.compile(r"http://127\.0\.0\.1:(\d+)/([A-Za-z0-9_-]{43})/")
    one, two = pattern.fullmatch(first), pattern.fullmatch(second)
    assert one and two and int(one.group(1)) > 0
    assert one.group(2) != two.group(2)


def test_the_page_is_served_only_under_the_token_with_headers_that_keep_it_private():
    async def body(server: ReviewServer, http: aiohttp.ClientSession) -> None:
        async with http.get(server.url) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
            assert answer.headers["Cache-Control"] == "no-store"
            assert answer.headers["Content-Security-Policy"] == CSP
            assert answer.headers["X-Frame-Options"] == "DENY"
            assert answer.headers["Referrer-Policy"] == "same-origin"
            assert "Deploy app" in await answer.text()
        root = f"http://127.0.0.1:{server.port}/"
        assert await status_of(http, "GET", root) == 403
        assert await status_of(http, "GET", root + "wrong-token/") == 403
        assert await status_of(http, "GET", server.url.replace(server.token, server.token[:-1])) == 403

    serve(body)


def test_requests_without_the_token_or_from_elsewhere_are_refused_and_decide_nothing():
    async def body(server: ReviewServer, http: aiohttp.ClientSession) -> None:
        root = f"http://127.0.0.1:{server.port}"
        port = server.port
        assert await status_of(http, "POST", f"{root}/apply") == 403
        assert await status_of(http, "POST", f"{root}//apply") == 403
        assert await status_of(http, "POST", server.url + "apply", Host=f"rebound.example:{port}") == 403
        assert await status_of(http, "POST", server.url + "apply", Origin="http://evil.example") == 403
        assert await status_of(http, "POST", server.url + "apply", Origin="null") == 403
        assert await status_of(http, "POST", server.url + "apply", **{"Sec-Fetch-Site": "cross-site"}) == 403
        assert await status_of(http, "GET", server.url + "apply") == 405
        assert await status_of(http, "POST", server.url) == 405
        assert await status_of(http, "POST", server.url + "close") == 404  # a page that asks has no Close
        assert server.stage is Stage.ASKING
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(server.decision(), 0.2)

    serve(body)


def test_the_first_decision_counts_and_a_later_one_is_refused():
    async def body(server: ReviewServer, http: aiohttp.ClientSession) -> tuple[Decision, Stage]:
        origin = f"http://127.0.0.1:{server.port}"
        headers = {"Origin": origin, "Sec-Fetch-Site": "same-origin"}
        async with http.post(server.url + "cancel", headers=headers) as answer:
            assert answer.status == 200
            assert "Cancelled: nothing was applied." in await answer.text()
        assert await status_of(http, "POST", server.url + "apply", **headers) == 409
        return await server.decision(), server.stage

    assert serve(body) == (Decision.CANCEL, Stage.CANCELLED)


def test_localhost_is_the_same_server_as_127_0_0_1():
    async def body(server: ReviewServer, http: aiohttp.ClientSession) -> Decision:
        headers = {"Host": f"localhost:{server.port}", "Origin": f"http://localhost:{server.port}"}
        assert await status_of(http, "POST", server.url + "apply", **headers) == 200
        return await server.decision()

    assert serve(body) == Decision.APPLY


def test_a_page_that_asks_nothing_is_closed():
    async def body(server: ReviewServer, http: aiohttp.ClientSession) -> Decision:
        assert await status_of(http, "POST", server.url + "apply") == 404
        assert await status_of(http, "POST", server.url + "close") == 200
        return await server.decision()

    assert serve(body, asks=False) == Decision.CLOSE


def test_after_apply_the_page_follows_the_run_and_the_server_waits_until_it_has_shown_the_outcome():
    shown: list[str] = []

    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            async with serving(review_of([configmap("web")])) as server:
                url = server.url
                async with http.post(url + "apply", headers={"Accept": BROWSER_ACCEPT}) as answer:
                    assert 'http-equiv="refresh"' in await answer.text()
                assert server.stage is Stage.APPLYING

                async def follow() -> None:  # what the page's refresh does, a little after the run ended
                    await asyncio.sleep(0.3)
                    async with http.get(url) as answer:
                        shown.append(await answer.text())

                following = asyncio.ensure_future(follow())
                server.finished()
            await following
            with pytest.raises(aiohttp.ClientConnectionError):
                await http.get(url)

    asyncio.run(main())
    assert "Applied: the deploy finished." in shown[0]


def test_a_failed_run_is_shown_with_its_error():
    async def body(server: ReviewServer, http: aiohttp.ClientSession) -> str:
        await status_of(http, "POST", server.url + "apply")
        server.finished("Applying create configmap/web: <forbidden>")
        async with http.get(server.url) as answer:
            return await answer.text()

    assert "Failed: the deploy stopped with an error: Applying create configmap/web: &lt;forbidden&gt;" in serve(body)


def test_after_a_script_applied_the_server_stops_with_the_run():
    async def main() -> float:
        async with aiohttp.ClientSession() as http:
            async with serving(review_of([configmap("web")])) as server:
                await status_of(http, "POST", server.url + "apply")
                server.finished()
                started = time.monotonic()
            return time.monotonic() - started

    assert asyncio.run(main()) < browser_server.LINGER / 2


def test_a_cancelled_page_has_already_shown_its_outcome_so_the_server_stops_at_once():
    async def main() -> float:
        async with aiohttp.ClientSession() as http:
            async with serving(review_of([configmap("web")])) as server:
                await status_of(http, "POST", server.url + "cancel")
                started = time.monotonic()
            return time.monotonic() - started

    assert asyncio.run(main()) < browser_server.LINGER / 2
