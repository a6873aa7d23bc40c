"""`stalwart user|u ...`: accounts (create, list, edit, activate, deactivate, change-password) and this CLI's own
session with a master (login, logout, whoami), kept per master in the auth file ($STALWART_HOME/auth.json)."""

from __future__ import annotations

import click

from stalwart.api.errors import InvalidRequest, StalwartError
from stalwart.api.models.users import User, UserList
from stalwart.cli import output, prompts
from stalwart.cli.base import AliasedGroup, client_of, format_options, master_url_of, user_flag_of
from stalwart.client import Client, credentials
from stalwart.client.auth_file import AuthFile

_ASK = "\0ask"
"""The value of a bare `--password`: ask for it (twice, hidden)."""


@click.group("user", cls=AliasedGroup, aliases={"ls": "list", "passwd": "change-password"})
def user() -> None:
    """Log in and out; create, change and list users.

    `login`, `logout` and `whoami` manage this CLI's own session with a master (kept per master in the auth file,
    $STALWART_HOME/auth.json); the other commands manage accounts, mostly for admins. `u` is short for `user`."""


def describe(u: User) -> str:
    """One user in words: 'alice (admin, active, display name "Alice")'."""
    traits = ["admin" if u.admin else "not an admin", "active" if u.active else "inactive"]
    if u.displayName:
        traits.append(f'display name "{u.displayName}"')
    if not u.hasPassword:
        traits.append("empty password")
    if u.agentUserGroup is not None:
        g = u.agentUserGroup
        traits.append(f"tasks run as OS user {g.agentUser} ({g.agentUid}), group {g.agentGroup} ({g.agentGid})")
    return f"{u.username} ({', '.join(traits)})"


# -- this CLI's session ------------------------------------------------------------------------
@user.command("login")
@click.argument("username", required=False)
@click.pass_context
def login(ctx: click.Context, username: str | None) -> None:
    """Log in with a password and keep the session.

    USERNAME (else the -u user, else asked for) becomes this master's active user: later commands act as it.

    The password is asked for (hidden at a terminal; a script gives it as a line of standard input). The session
    is kept in the auth file, so later commands need no password until it expires (7 days) or is ended.
    """
    url = master_url_of(ctx)
    name = username or user_flag_of(ctx) or prompts.answer("Username")
    password = prompts.secret(f"Password for user '{name}'")
    credentials.log_in(url, name, password)
    output.console.print(f"Logged in as {name} at {url}.")


@user.command("logout")
@click.pass_context
def logout(ctx: click.Context) -> None:
    """End your session with the master and forget it.

    The session of this master's active user (or of the -u user) is ended on the master and removed from the
    auth file; the next command asks who you are. Access tokens stay valid (`token revoke` ends one)."""
    url = master_url_of(ctx)
    store = AuthFile()
    name = user_flag_of(ctx) or store.active_user(url)
    token = store.token(url, name) if name else None
    if name is None or token is None:
        output.console.print(f"No session kept for {name or 'any user'} at {url}: nothing to log out.")
        return
    try:
        with Client(url, session_token=token, timeout=10) as c:
            c.logout()
    except StalwartError:  # an expired or revoked session, an unreachable master: forgetting it is what matters
        pass
    store.forget(url, name)
    output.console.print(f"Logged out {name} at {url}.")


@user.command("whoami")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_context
def whoami(ctx: click.Context, as_json: bool) -> None:
    """Show which user this CLI acts as with the master.

    The user whose session (or access token) the next command uses, and at which master. It changes nothing;
    `login` changes it."""
    client = client_of(ctx)
    me = client.me()
    if as_json:
        output.print_json(me)
        return
    output.console.print(f"You are logged in as user '{me.username}'{' (an admin)' if me.admin else ''} "
                         f"at {client.url}.")


# -- accounts ---------------------------------------------------------------------------------
@user.command("create")
@click.argument("username")
@click.option("--admin", is_flag=True, help="Make the user an admin.")
@click.option("--password", is_flag=False, flag_value=_ASK, default=None, metavar="[PASSWORD]",
              help="Its password; given bare (NAME --password), it is asked for twice, hidden (a password on the "
                   "command line stays in your shell's history). Without it the password is empty.")
@click.option("--display-name", default=None, help="The name the web UI shows.")
@click.pass_context
def create(ctx: click.Context, username: str, admin: bool, password: str | None, display_name: str | None) -> None:
    """Create a user account that can log in.

    Admins only. USERNAME gets --password (asked for when given bare; empty without it), and is an admin with
    --admin. `edit` changes it later; `deactivate` shuts it out."""
    client = client_of(ctx)
    if password == _ASK:
        password = prompts.new_secret(f"Password for new user '{username}'")
    made = client.create_user(username, password=password, admin=admin, display_name=display_name)
    output.console.print(f"Created user {describe(made)}.")
    if not made.hasPassword:
        output.warn(f"{username} has an empty password: anyone who reaches the master can log in as {username}, "
                    f"and a master listening beyond 127.0.0.1 refuses to start. Set one with "
                    f"`stalwart user change-password {username}`.")


@user.command("list")
@click.option("-a", "--all", "show_all", is_flag=True, help="Inactive users too.")
@format_options
@click.pass_context
def list_users(ctx: click.Context, show_all: bool, fmt: output.Format) -> None:
    """List the active users and when each last logged in.

    A row per user (inactive ones too with --all): username, display name, admin, active, whether its password
    is set, and its last login. `describe` shows one with the OS user its tasks run as."""
    everyone = client_of(ctx).list_users()
    shown = everyone if show_all else [u for u in everyone if u.active]
    output.emit(fmt, ["Username", "Display name", "Admin", "Active", "Password", "Last login"],
                [(u.username, u.displayName, "yes" if u.admin else "no", "yes" if u.active else "no",
                  "set" if u.hasPassword else "empty", output.when(u.lastAuthAt)) for u in shown],
                json_data=UserList(users=shown))
    hidden = len(everyone) - len(shown)
    if hidden and fmt is output.Format.TABLE:
        output.info(f"{hidden} inactive user(s) not shown: --all lists them.")


@user.command("edit")
@click.argument("username")
@click.option("--activate/--deactivate", "active", default=None,
              help="Let the user log in, or end its sessions and tokens at once and refuse it (admins only).")
@click.option("--admin/--no-admin", "admin", default=None, help="Make or unmake an admin (admins only).")
@click.option("--display-name", default=None, help="The name the web UI shows (your own, or anyone's for admins).")
@click.pass_context
def edit(ctx: click.Context, username: str, active: bool | None, admin: bool | None, display_name: str | None) -> None:
    """Change a user's display name, admin role or state.

    Only what is given changes: --display-name (your own, or anyone's for admins), --admin/--no-admin and
    --activate/--deactivate (admins only; deactivating ends its sessions and tokens at once). `activate` and
    `deactivate` do the last for several users at once; `change-password` sets a password."""
    if active is None and admin is None and display_name is None:
        raise InvalidRequest("nothing to change: give --activate/--deactivate, --admin/--no-admin or --display-name")
    changed = client_of(ctx).edit_user(username, active=active, admin=admin, display_name=display_name)
    output.console.print(f"User {describe(changed)}.")


def _set_active(ctx: click.Context, usernames: tuple[str, ...], active: bool) -> None:
    client = client_of(ctx)
    for name in usernames:
        changed = client.edit_user(name, active=active)
        output.console.print(f"User {describe(changed)}.")


@user.command("activate")
@click.argument("usernames", nargs=-1, required=True)
@click.pass_context
def activate(ctx: click.Context, usernames: tuple[str, ...]) -> None:
    """Let deactivated users log in again.

    Admins only. Each of USERNAMES may log in again. The same as `edit --activate`, for several users;
    `deactivate` is the opposite."""
    _set_active(ctx, usernames, True)


@user.command("deactivate")
@click.argument("usernames", nargs=-1, required=True)
@click.pass_context
def deactivate(ctx: click.Context, usernames: tuple[str, ...]) -> None:
    """Shut users out: end their sessions and tokens now.

    Admins only. Each of USERNAMES' sessions and access tokens stop working at once and it cannot log in; its
    experiments and commands are left as they are. `activate` lets it back in; the same as
    `edit --deactivate`."""
    _set_active(ctx, usernames, False)


@user.command("change-password")
@click.argument("username", required=False)
@click.pass_context
def change_password(ctx: click.Context, username: str | None) -> None:
    """Set your password, or another user's as an admin.

    It asks for the new password twice (and first for your current one, when it is your own); admins may set
    USERNAME's. Sessions and access tokens stay valid; `deactivate` ends them."""
    client = client_of(ctx)
    me = client.me().username
    name = username or me
    current = prompts.secret("Current password") if name == me else None
    new = prompts.new_secret(f"New password for user '{name}'")
    client.set_password(name, new, old_password=current)
    output.console.print(f"Changed the password of {name}.")


@user.command("describe")
@click.argument("username")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_context
def describe_user(ctx: click.Context, username: str, as_json: bool) -> None:
    """Show one user's account and whom its tasks run as.

    USERNAME's display name, whether it is an admin and active, whether its password is set, and the OS user and
    group its tasks run as (see `link-with-agent-user`)."""
    found = client_of(ctx).get_user(username)
    if as_json:
        output.print_json(found)
        return
    output.console.print(f"User {describe(found)}.")


@user.command("link-with-agent-user")
@click.argument("username")
@click.option("--agent-uid", type=int, default=None, help="The OS user id its tasks run as.")
@click.option("--agent-gid", type=int, default=None, help="The OS group id its tasks run as.")
@click.option("--agent-user", default=None, help="The OS user name (as on the agents' machines).")
@click.option("--agent-group", default=None, help="The OS group name (as on the agents' machines).")
@click.option("--unlink", is_flag=True, help="Forget the link: tasks run as the workspace's OS user, else the agent's.")
@click.pass_context
def link_with_agent_user(ctx: click.Context, username: str, agent_uid: int | None, agent_gid: int | None,
                         agent_user: str | None, agent_group: str | None, unlink: bool) -> None:
    """Choose the OS user a user's tasks run as on agents.

    Admins only. On agents that run as root, USERNAME's tasks then run as the OS user and group given by the four
    --agent-* options (--unlink forgets them: the workspace's OS user applies, else the agent's). Its tasks then
    cannot read the master's files, the agent's, or other users' tasks' work directories; an agent
    that is not root refuses to start them.
    """
    given = {"--agent-uid": agent_uid, "--agent-gid": agent_gid, "--agent-user": agent_user,
             "--agent-group": agent_group}
    client = client_of(ctx)
    if unlink:
        if any(v is not None for v in given.values()):
            raise InvalidRequest("--unlink takes no --agent-* options: give either --unlink or all four")
        output.console.print(f"User {describe(client.unlink_agent_user(username))}.")
        return
    missing = [flag for flag, value in given.items() if value is None]
    if missing:
        raise InvalidRequest(f"missing {', '.join(missing)}: give all of --agent-uid, --agent-gid, --agent-user and "
                             "--agent-group (e.g. the output of `id USER` on the agents' machines), or --unlink")
    assert agent_uid is not None and agent_gid is not None and agent_user is not None and agent_group is not None
    linked = client.link_agent_user(username, uid=agent_uid, gid=agent_gid, user=agent_user, group=agent_group)
    output.console.print(f"User {describe(linked)}.")
