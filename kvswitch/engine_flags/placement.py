"""Where the servers of a split go: a port of their own each (the router keeps the profile's),
and side ports (NIXL, bootstrap, metrics) that no HTTP server here already uses."""

from __future__ import annotations

from kvswitch.engine_flags.build import Build
from kvswitch.engine_flags.model import DEFAULT_PORTS
from kvswitch.engine_flags.where import Where, host_key
from kvswitch.i18n import tr

__all__ = ["place", "side_port"]


def place(b: Build, router: Where, prefill: Where, decode: Where) -> None:
    """Give each of the three servers its own port (the router keeps the profile's)."""
    servers = (router, prefill, decode)
    groups: dict[tuple[str, int], list[Where]] = {}
    for w in servers:
        groups.setdefault(w.key, []).append(w)
    taken = {router.key}
    moved: list[Where] = []
    for w in (prefill, decode):
        if w.key in taken:
            port = DEFAULT_PORTS[b.engine][w.role]
            while (host_key(w.host), port) in taken:
                port += 1
            w.port, w.moved = port, True
            moved.append(w)
        taken.add(w.key)
    if not moved:
        return
    clashes = [ws for ws in groups.values() if len(ws) > 1]
    said = [tr("{servers} are one address").format(servers=_and([_named(w) for w in ws])) for ws in clashes]
    clash = said[0]
    for more in said[1:]:
        clash = tr("{earlier}; {next_group}").format(earlier=clash, next_group=more)
    addr = ", ".join(f"{ws[0].host}:{ws[0].port}" for ws in clashes)  # the first of a group stays
    b.use(
        "port-moved",
        clash=clash,
        addr=addr,
        moved=_and([_moved_to(w) for w in moved]),
        fix=f"kvswitch profile edit {b.pname} " + " ".join(f"--{w.role}-base-url {w.url}" for w in moved),
    )


def _named(w: Where) -> str:
    """``the prefill instance (split.prefill_base_url)``, in the user's language."""
    if w.role == "router":
        return tr("the router ({field})").format(field=w.field)
    if w.role == "prefill":
        return tr("the prefill instance ({field})").format(field=w.field)
    return tr("the decode instance ({field})").format(field=w.field)


def _moved_to(w: Where) -> str:
    """``http://…:8100/v1 for the prefill instance``, in the user's language."""
    if w.role == "prefill":
        return tr("{url} for the prefill instance").format(url=w.url)
    return tr("{url} for the decode instance").format(url=w.url)


def _and(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (in the user's language)."""
    text = items[0]
    for item in items[1:-1]:
        text = tr("{earlier}, {next_item}").format(earlier=text, next_item=item)
    if len(items) > 1:
        text = tr("{earlier} and {last_item}").format(earlier=text, last_item=items[-1])
    return text


def side_port(b: Build, name: str, port: int, host: str, used: set[tuple[str, int]], http: set[tuple[str, int]]) -> int:
    """``port``, or the next one free on ``host``; says so when an HTTP server took it."""
    start, clashed = port, False
    while (host_key(host), port) in used:
        clashed = clashed or (host_key(host), port) in http
        port += 1
    if clashed:
        b.note("side-port-moved", name=name, port=start, moved=port)
    used.add((host_key(host), port))
    return port
