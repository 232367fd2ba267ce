"""The clients installed on this machine: their files at the default paths, their programs
on ``PATH`` and the programs' versions (``kvswitch client detect``).

Nothing here writes. A version comes from the npm ``package.json`` of the package the
program belongs to (read, not run); only a program outside any package is asked with
``--version``, under a timeout, with no input and a plain environment.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.kinds import ClientKind
    from kvswitch.models import ClientEntry

__all__ = ["VERSION_TIMEOUT", "Installed", "detect_clients", "program_version", "register_found", "usual_file"]

VERSION_TIMEOUT = 5.0
"""Seconds a program gets to answer ``--version``."""
_PACKAGE_JSON_MAX = 1 << 20
_VERSION = re.compile(r"\b(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)\b")


@dataclass(frozen=True)
class Installed:
    """One real client as found on this machine (``found``: its file or its program is here)."""

    kind: str
    product: str
    file: Path
    file_exists: bool
    program: Path | None = None
    version: str | None = None
    endpoint: str | None = None
    model: str | None = None
    registered: bool = False
    name: str | None = None
    problem: str | None = None
    """Why the file's endpoint could not be read (it is still listed)."""

    @property
    def found(self) -> bool:
        return self.file_exists or self.program is not None


def detect_clients(
    config: Config | None = None,
    *,
    env: Mapping[str, str] | None = None,
    versions: bool = True,
) -> list[Installed]:
    """Every real client kind, found or not, in registry order; ``config`` (when there is
    one) tells which are registered."""
    from kvswitch.kinds import all_kinds

    env = os.environ if env is None else env
    out = []
    for kind in all_kinds(clients_only=True):
        if not kind.programs:
            continue  # the article's shapes: no released program reads them
        file = usual_file(kind, env)
        if file is None:
            continue
        program = _which(kind.programs, env)
        version = program_version(program, kind) if program is not None and versions else None
        endpoint, model, problem = _endpoint(kind, file)
        entry = _registered(config, file, kind.id)
        out.append(
            Installed(
                kind.id,
                kind.product,
                file,
                file.is_file(),
                program,
                version,
                endpoint,
                model,
                entry is not None,
                entry.name if entry is not None else None,
                problem,
            )
        )
    return out


def usual_file(kind: ClientKind, env: Mapping[str, str] | None = None) -> Path | None:
    """The user-level file ``kind``'s client reads: the first of its usual places that holds
    one, else the first place (``None``: the kind has no usual place)."""
    from kvswitch.paths import user_dirs

    env = os.environ if env is None else env
    paths = kind.default_paths(*user_dirs(env), env)
    return next((p for p in paths if p.is_file()), paths[0]) if paths else None


def _which(programs: tuple[str, ...], env: Mapping[str, str]) -> Path | None:
    for name in programs:
        found = shutil.which(name, path=env.get("PATH", os.defpath))
        if found:
            return Path(found)
    return None


def program_version(program: Path, kind: ClientKind) -> str | None:
    """The version of ``program``: its npm package's, else what ``--version`` prints."""
    version = _package_version(program, kind.packages)
    return version if version is not None else _asked_version(program)


def _package_version(program: Path, packages: tuple[str, ...]) -> str | None:
    """The ``version`` of the nearest ``package.json`` above the real program whose name is
    one of ``packages`` (a name ending in ``-`` is a prefix)."""
    try:
        real = Path(os.path.realpath(program))
    except OSError:
        return None
    for folder in list(real.parents)[:6]:
        manifest = folder / "package.json"
        try:
            if not manifest.is_file() or manifest.stat().st_size > _PACKAGE_JSON_MAX:
                continue
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        name, version = data.get("name"), data.get("version")
        if isinstance(name, str) and _matches(name, packages) and isinstance(version, str):
            return version if _VERSION.fullmatch(version) else None
    return None


def _matches(name: str, packages: tuple[str, ...]) -> bool:
    return any(name.startswith(p) if p.endswith("-") else name == p for p in packages)


def _asked_version(program: Path) -> str | None:
    """The first version number ``program --version`` prints (``None`` on any failure)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
    try:
        done = subprocess.run(
            [str(program), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=VERSION_TIMEOUT,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    m = _VERSION.search(done.stdout[:4096].decode("utf-8", "replace")) if done.returncode == 0 else None
    return m.group(1) if m else None


def _endpoint(kind: ClientKind, file: Path) -> tuple[str | None, str | None, str | None]:
    """The file's current URL and model (never its key), or why they cannot be read."""
    from kvswitch.document import parse_config
    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_bytes

    if not file.is_file():
        return None, None, None
    try:
        settings = kind.current(parse_config(read_bytes(file), kind.id, file).data)
    except KvswitchError as exc:
        return None, None, exc.message
    if settings is None:
        return None, None, None
    from kvswitch.validate import redact_url

    return redact_url(settings.url), settings.model, None


def _registered(config: Config | None, file: Path, kind: str) -> ClientEntry | None:
    if config is None:
        return None
    from kvswitch.clients import registered

    return registered(config, file)


def register_found(found: list[Installed]) -> list[str]:
    """Register each of ``found`` not registered yet, at its file, named by its kind (or
    ``<kind>-2``… when taken); kvswitch's config is created, holding only the clients, when
    there is none. The clients' files are not touched. Returns the names registered."""
    from kvswitch.clients import registered
    from kvswitch.config import add_client_edit, client_table, config_file, edit_config, read_config
    from kvswitch.io import read_optional, write_private
    from kvswitch.literals import CONFIG_VERSION
    from kvswitch.models import ClientEntry

    todo = [f for f in found if f.found and not f.registered]
    if not todo:
        return []
    path = config_file()
    if read_optional(path) is None:
        head = tr(
            "kvswitch config. Add a profile with kvswitch import CLIENT or kvswitch init;\n"
            "comments you add are kept. API keys are never stored here."
        )
        write_private(
            path,
            (
                "".join(f"# {line}\n" for line in head.splitlines())
                + f'version = {CONFIG_VERSION}\nmode = "merged"   # merged | split\n'
            ).encode(),
        )
    config = read_config(path)
    names = {e.name for e in config.model.clients if e.name}
    tables, added = [], []
    for f in todo:
        if registered(config, f.file) is not None:
            continue
        name, n = f.kind, 2
        while name in names:
            name, n = f"{f.kind}-{n}", n + 1
        names.add(name)
        tables.append(ClientEntry(path=str(f.file), kind=f.kind, name=name))
        added.append(name)
    if tables:
        from kvswitch.edits import Set

        first = add_client_edit(config, tables[0])  # creates [[clients]] where there is none
        n = len(config.model.clients)
        rest = [Set(("clients", n + i), client_table(t)) for i, t in enumerate(tables[1:], 1)]
        edit_config([first, *rest], config)
    return added
