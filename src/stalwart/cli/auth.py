"""`stalwart auth login [--headless]`: single sign-on through the master's OpenID Connect provider (Determined's
`det auth login`), keeping the session in the auth file like `stalwart user login`.

The browser flow listens on 127.0.0.1 (a free port) and opens the master's /oidc/login; after the provider's login
the master sends the browser back to that port with a one-time code. `--headless` prints the URL instead and asks
for the code the master's page shows. Either way the code is traded together with a secret this command never
sends anywhere else (`client.oidc.new_verifier`), so a code seen by someone else is of no use to them.
"""

from __future__ import annotations

import http.server
import queue
import sys
import threading
import webbrowser
from urllib.parse import parse_qs, urlsplit

import click

from stalwart.api.errors import InvalidRequest
from stalwart.cli import output, prompts
from stalwart.cli.base import master_url_of
from stalwart.client import Client
from stalwart.client.auth_file import AuthFile
from stalwart.client.oidc import login_url, new_verifier

WAIT_S = 600.0  # how long the browser flow waits for the login to come back


@click.group("auth")
def auth() -> None:
    """Log in through single sign-on.

    For a master set up with an OpenID Connect identity provider; `user login` logs in with a password
    instead."""


@auth.command("login")
@click.option("--headless", is_flag=True,
              help="Print the login URL instead of opening a browser here, and ask for the code the master shows.")
@click.pass_context
def login(ctx: click.Context, headless: bool) -> None:
    """Log in through the master's single sign-on provider.

    It opens the provider's login page in a browser (--headless: prints its address and asks for the code the
    master's page shows), then keeps the session in the auth file and makes that user this master's active user,
    as `user login` does with a password. `user logout` ends the session."""
    url = master_url_of(ctx)
    with Client(url, timeout=30) as client:
        info = client.sso_info()
        if not info.enabled:
            raise InvalidRequest(f"the master at {url} has no single sign-on (oidc is not enabled in its config): "
                                 "log in with a password instead (`stalwart user login`)")
        verifier = new_verifier()
        code = _headless_code(url, verifier, info.provider) if headless else _browser_code(url, verifier)
        answer = client.redeem_sso_code(code, verifier)
    AuthFile().store(url, answer.user.username, answer.token)
    output.console.print(f"Logged in as {answer.user.username} at {url}.")


def _headless_code(url: str, verifier: str, provider: str | None) -> str:
    output.console.print(f"Open this URL in a browser and sign in with {provider or 'your provider'}:",
                         soft_wrap=True)
    print(login_url(url, verifier, port=None), flush=True)
    return prompts.answer("Code shown by the master")


class _Callback(http.server.BaseHTTPRequestHandler):
    """Takes GET /callback?code=... once; every other request is a 404."""

    codes: queue.Queue[str]

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        parts = urlsplit(self.path)
        code = parse_qs(parts.query).get("code", [""])[0]
        if parts.path != "/callback" or not code:
            self.send_error(404)
            return
        self.codes.put(code)
        page = b"<!doctype html><title>Stalwart</title><p>Signed in: close this page and go back to the terminal."
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
        pass


def _browser_code(url: str, verifier: str) -> str:
    codes: queue.Queue[str] = queue.Queue()
    handler = type("Callback", (_Callback,), {"codes": codes})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="sso-callback", daemon=True)
    thread.start()
    try:
        target = login_url(url, verifier, port=server.server_address[1])
        output.console.print("Opening your browser to sign in. If it does not open, visit:", soft_wrap=True)
        print(target, flush=True)
        webbrowser.open(target)
        try:
            return codes.get(timeout=WAIT_S)
        except queue.Empty:
            raise InvalidRequest(f"no login came back within {int(WAIT_S)} s: run `stalwart auth login` again, "
                                 "or `stalwart auth login --headless` on a machine without a browser") from None
    finally:
        server.shutdown()
        server.server_close()
        sys.stdout.flush()
