"""HTML rendering: the Jinja2 environment (autoescaped), embedded page models, static assets and error pages."""

from __future__ import annotations

import functools
import hashlib
import json
import pathlib
import re
from collections.abc import Sequence

import jinja2
from fastapi import Request
from fastapi.responses import FileResponse, HTMLResponse, Response

import stalwart
from stalwart.api.errors import NotFoundError
from stalwart.api.routes_table import BY_KEY, HTML
from stalwart.master.ui.viewer import Viewer

HERE = pathlib.Path(__file__).parent
STATIC = HERE / "static"
SWAGGER_UI = "vendor/swagger-ui-5.35.0"  # under STATIC: the REST API docs page's assets (see its SOURCE.txt)

# Pages run only our own scripts; inline styles are allowed because uPlot positions its elements with them.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "same-origin", "Cache-Control": "no-store"}
TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png", ".svg": "image/svg+xml",
         ".txt": "text/plain", ".ico": "image/x-icon"}

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                          autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
                          undefined=jinja2.StrictUndefined)


def asset_version() -> str:
    """A hash of the static files: part of their URLs, so browsers may cache them forever."""
    h = hashlib.sha256(stalwart.__version__.encode())
    for p in sorted(STATIC.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(STATIC)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:12]


VERSION = asset_version()
_IMPORT = re.compile(r'^import\s[^;]*?from\s+"\./([\w.-]+\.js)"|^import\s+"\./([\w.-]+\.js)"', re.M)
_VENDOR = re.compile(r'from\s+"\.\./(vendor/[\w./-]+\.js)"')


@functools.cache
def module_closure(entry: str) -> list[str]:
    """Every module `js/<entry>` imports, directly or not (paths under static/), for <link rel=modulepreload>."""
    seen: list[str] = []
    todo = [f"js/{entry}"]
    while todo:
        path = todo.pop()
        if path in seen or not (STATIC / path).is_file():
            continue
        seen.append(path)
        text = (STATIC / path).read_text()
        todo += [f"js/{a or b}" for a, b in _IMPORT.findall(text)] + _VENDOR.findall(text)
    return seen


def json_for_html(data: object) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' can end the element."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028") \
        .replace("\u2029", "\\u2029")


def render(template: str, *, title: str, page: str, model: object = None, status: int = 200, entry: str | None = None,
           preload: Sequence[str] = (), viewer: Viewer | None = None, **ctx: object) -> HTMLResponse:
    """Render a page; `entry` is its JS module (all its imports are preloaded), `preload` URLs it will fetch;
    `viewer` is the signed-in user the header names (None: nobody, the header has no user and no logout)."""
    html = _env.get_template(template).render(
        title=title, page=page, static=f"/ui/static/{VERSION}", version=stalwart.__version__,
        model_json=json_for_html(model) if model is not None else None,
        modules=module_closure(entry) if entry else [], preload=list(preload), viewer=viewer, **ctx)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def error_page(status: int, message: str, details: list[str] | None = None, viewer: Viewer | None = None
               ) -> HTMLResponse:
    titles = {400: "Bad request", 401: "Not signed in", 403: "Permission denied", 404: "Not found",
              409: "Conflict", 500: "Something went wrong"}
    return render("error.html", title=titles.get(status, f"Error {status}"), page="error", status=status,
                  message=message, details=details or [], code=status, viewer=viewer)


def wants_html(request: Request) -> bool:
    path = request.url.path
    return not path.startswith("/api/") and "text/html" in request.headers.get("accept", "")


def is_html_route(request: Request) -> bool:
    """Does the route that matched this request answer HTML (a page), as its route-table entry says?"""
    path = getattr(request.scope.get("route"), "path", None)
    method = "GET" if request.method == "HEAD" else request.method
    spec = BY_KEY.get((method, path)) if path else None
    return spec is not None and spec.content_type == HTML


def static_file(path: str) -> Response:
    """A file under static/ (never outside it), cached for a year: its URL changes when the files do."""
    try:
        target = (STATIC / path).resolve()
        found = target.is_relative_to(STATIC.resolve()) and target.is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL: no such file either
        found = False
    if not found:
        shown = path if len(path) <= 100 else path[:100] + "..."
        raise NotFoundError(f"no static file {shown!r}")
    return FileResponse(target, media_type=TYPES.get(target.suffix, "application/octet-stream"),
                        headers={"Cache-Control": "public, max-age=31536000, immutable",
                                 "X-Content-Type-Options": "nosniff"})
