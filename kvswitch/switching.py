"""Switching client files between merged and split (D-3).

``plan_switch`` is pure: it turns a parsed file and a mode into edits and the values to
remember; how a mode is expressed is the file's kind's business (:mod:`kvswitch.kinds`).
``switch`` reads the files, plans, verifies and writes them all or none. A file already in
the mode (and its form) is left alone: no write, no backup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvswitch.document import ConfigFile, parse_config
from kvswitch.edits import Delete, Edit
from kvswitch.errors import ConfigValidationError, EditError, KvswitchError, Location
from kvswitch.i18n import ntr, tr
from kvswitch.kinds import ModeDefaults, SwitchPlan, get_path, kind_of
from kvswitch.literals import CacheMode, FileKind
from kvswitch.records import record, replace

if TYPE_CHECKING:
    from kvswitch.diagnostics import Diagnostic

__all__ = [
    "FileSwitch",
    "ModeDefaults",
    "SwitchPlan",
    "blocking_findings",
    "plan_switch",
    "refusal",
    "refuse_on_errors",
    "secrets_in",
    "switch",
]


@record
class FileSwitch:
    """The outcome for one file: ``changed`` is False for a no-op; ``diff`` has keys masked."""

    path: Path
    kind: FileKind
    old_mode: str | None
    new_mode: CacheMode
    changed: bool
    diff: str
    backup: Path | None = None


def plan_switch(cf: ConfigFile, mode: CacheMode, defaults: ModeDefaults | None = None) -> SwitchPlan:
    """The edits that put ``cf`` in ``mode`` (none when it is already there)."""
    if mode not in ("merged", "split"):
        raise ValueError(f"mode must be 'merged' or 'split', not {mode!r}")
    return kind_of(cf).plan_mode(cf, mode, defaults)


def secrets_in(cf: ConfigFile) -> list[str]:
    """Key values a file holds, so diffs and reports can mask them."""
    out = []
    for path in kind_of(cf).key_paths(cf.data):
        value = get_path(cf.data, path)
        if isinstance(value, str) and value:
            out.append(value)
    return out


def render_diff(path: Path | None, old: str, new: str, keys: Sequence[str]) -> str:
    """A unified diff of two versions with every key masked."""
    from kvswitch.redact import redact
    from kvswitch.textdiff import unified_diff

    name = str(path) if path is not None else "<string>"
    return redact(unified_diff(old, new, f"{name} (now)", f"{name} (after)"), keys)


def _apply(cf: ConfigFile, plan: SwitchPlan) -> str:
    try:
        return cf.doc.apply(list(plan.edits))
    except (ValueError, TypeError, KeyError) as exc:
        raise EditError(
            tr("the switch could not be applied safely, nothing was written: {error}").format(error=exc),
            Location(cf.path),
        ) from exc


def _errors(cf: ConfigFile) -> list[Diagnostic]:
    from kvswitch.diagnostics import Severity
    from kvswitch.rules import check

    # git=False: KVS212 (a key in a tracked file) is the pre-commit hook's business, and a
    # switch never adds a key to a file in a repository (D-7)
    return [d for d in check(cf, git=False) if d.severity is Severity.ERROR]


def blocking_findings(
    cf: ConfigFile, new_text: str, edits: Iterable[Edit] = (), *, carried: bool = True
) -> list[Diagnostic]:
    """The error-severity findings that stop ``cf`` from becoming ``new_text``.

    They are every error lint finds in the new text, and (``carried``) every error in a value
    the edits take out of the file, which would be remembered and come back on the way back.
    An error the change itself repairs (a hand-flipped Cline mode whose form it completes, a
    wrong ``mode`` it overwrites) does not block. Warnings and infos never do. An error the file
    has now and keeps is reported where it is now; one the change would make is placed at its
    key (or the nearest enclosing key) in the file as it is now, marked "after the change"."""
    if new_text == cf.text:
        return _errors(cf)
    after = _errors(parse_config(new_text, cf.kind, cf.path))
    gone = [e.path for e in edits if isinstance(e, Delete)] if carried else []
    if not after and not gone:
        return []  # nothing to place, nothing carried away: no need to lint the file as it is
    before = _errors(cf)
    now = {(d.code, d.key_path): d for d in before}
    out = []
    for d in after:
        kept = now.get((d.code, d.key_path))
        out.append(kept if kept is not None else _here(cf, d))
    out += [d for d in before if d not in out and any(d.key_path[: len(p)] == p for p in gone)]
    return sorted(out, key=lambda d: (str(d.path), d.line or 0, d.column or 0, d.code))


def _here(cf: ConfigFile, d: Diagnostic) -> Diagnostic:
    """A finding of the planned text, placed in the file as it is now: at its key, or at the
    nearest enclosing key the file already has."""
    for n in range(len(d.key_path), -1, -1):
        spot = cf.doc.locate(d.key_path[:n])
        if spot is not None:
            line, column = spot
            break
    else:
        line, column = 1, 1
    return replace(d, message=tr("{message} (after the change)").format(message=d.message), line=line, column=column)


def refusal(findings: Sequence[Diagnostic], what: str, secrets: Iterable[str] = ()) -> ConfigValidationError:
    """The error that refuses ``what`` (e.g. "switch to split") because of ``findings``: its
    message lists them as lint does (``path:line:col: CODE error: message``), keys masked."""
    n = len(findings)
    head = ntr(
        "{what} refused, nothing was written: {count} error to fix first "
        "(kvswitch lint --fix repairs the fixable ones)",
        "{what} refused, nothing was written: {count} errors to fix first "
        "(kvswitch lint --fix repairs the fixable ones)",
        n,
    ).format(what=what, count=n)
    from kvswitch.redact import redact

    lines = [_finding_line(d) for d in findings]
    text = redact("\n".join([head, *lines]), list(secrets))
    return ConfigValidationError(text, None, tuple(findings))


def _finding_line(d: Diagnostic) -> str:
    """``path:line:col: CODE severity: message``, as lint writes it (the severity in the user's language)."""
    severity = str(d.severity)
    if severity == "error":
        line = tr("{location}: {code} error: {message}")
    elif severity == "warning":
        line = tr("{location}: {code} warning: {message}")
    else:
        line = tr("{location}: {code} info: {message}")
    return line.format(location=d.location, code=d.code, message=d.message)


def refuse_on_errors(
    checks: Iterable[tuple[ConfigFile, str, Iterable[Edit]]],
    what: str,
    *,
    carried: bool = True,
    secrets: Iterable[str] = (),
) -> None:
    """Raise :func:`refusal` when any (file now, text planned, edits) has
    :func:`blocking_findings`; every file's findings are listed, not only the first file's."""
    found: list[Diagnostic] = []
    keys = list(secrets)
    for cf, new_text, edits in checks:
        blocking = blocking_findings(cf, new_text, edits, carried=carried)
        if blocking:
            found += blocking
            keys += secrets_in(cf)
    if found:
        raise refusal(found, what, keys)


def _distinct(files: Sequence[Path]) -> None:
    import os

    seen: dict[str, Path] = {}
    for path in files:
        real = os.path.realpath(path)
        if real in seen:
            raise KvswitchError(
                tr("{first} and {second} are the same file; name it once. Nothing was changed.").format(
                    first=seen[real], second=path
                ),
                Location(path),
            )
        seen[real] = path


def switch(
    mode: CacheMode,
    paths: Sequence[Path | str],
    *,
    dry_run: bool = False,
    kinds: Sequence[FileKind | None] | None = None,
    defaults: ModeDefaults | Sequence[ModeDefaults | None] | None = None,
) -> list[FileSwitch]:
    """Put every file in ``paths`` in ``mode``, all or none.

    Each file is read, planned, edited and verified; then all changed files are written
    together (:func:`kvswitch.transaction.commit_all`), all under the switch lock
    (:func:`kvswitch.locks.switch_lock`). ``dry_run`` writes nothing and returns the diffs.
    Raises a :class:`~kvswitch.errors.KvswitchError` naming the file on the first problem,
    with nothing written."""
    from kvswitch.locks import unless_dry_run

    with unless_dry_run(dry_run):
        return _switch_files(mode, paths, dry_run=dry_run, kinds=kinds, defaults=defaults)


def _switch_files(
    mode: CacheMode,
    paths: Sequence[Path | str],
    *,
    dry_run: bool,
    kinds: Sequence[FileKind | None] | None,
    defaults: ModeDefaults | Sequence[ModeDefaults | None] | None,
) -> list[FileSwitch]:
    from kvswitch.io import read_bytes
    from kvswitch.state import forget, remember
    from kvswitch.transaction import FileWrite, commit_all

    files = [Path(p) for p in paths]
    _distinct(files)
    kinds = list(kinds) if kinds is not None else [None] * len(files)
    defaults_list = list(defaults) if isinstance(defaults, Sequence) else [defaults] * len(files)
    outcomes: list[tuple[ConfigFile, SwitchPlan, str]] = []
    for path, kind, dflt in zip(files, kinds, defaults_list, strict=True):
        cf = parse_config(read_bytes(path), kind, path)
        plan = plan_switch(cf, mode, dflt)
        new_text = cf.text if plan.noop else _apply(cf, plan)
        outcomes.append((cf, plan, new_text))
    # a switch never writes what lint rejects, nor carries an error away to bring it back later
    refuse_on_errors(((cf, text, plan.edits) for cf, plan, text in outcomes), tr("switch to {mode}").format(mode=mode))

    results = [
        FileSwitch(
            path,
            cf.kind,
            plan.old_mode,
            mode,
            not plan.noop,
            "" if plan.noop else render_diff(path, cf.text, new_text, secrets_in(cf)),
        )
        for path, (cf, plan, new_text) in zip(files, outcomes, strict=True)
    ]
    if dry_run:
        return results

    def rebuild_for(kind: FileKind, path: Path, dflt: ModeDefaults | None) -> Any:
        def rebuild(current: bytes) -> bytes:
            cf2 = parse_config(current, kind, path)
            plan2 = plan_switch(cf2, mode, dflt)
            text2 = cf2.text if plan2.noop else _apply(cf2, plan2)
            # the version saved meanwhile must pass too
            refuse_on_errors([(cf2, text2, plan2.edits)], tr("switch to {mode}").format(mode=mode))
            remember(path, plan2.remember)  # what leaves this version must be kept first
            return current if plan2.noop else text2.encode("utf-8")

        return rebuild

    writes = []
    for path, (cf, plan, new_text), dflt in zip(files, outcomes, defaults_list, strict=True):
        if plan.noop:
            continue
        # remembered before the file loses them: a crash between the two keeps both
        remember(path, plan.remember)
        writes.append(FileWrite(path, new_text.encode("utf-8"), cf.raw, rebuild_for(cf.kind, path, dflt)))
    written = {w.path: w for w in commit_all(writes)} if writes else {}
    if written:
        from kvswitch.state import record_writes

        # a file kvswitch keeps a record of (a registered client) is not "changed outside" now
        record_writes(list(written), {w.path: w.data for w in writes if not written[w.path].reapplied}, known_only=True)
    final = []
    for res, (_, plan, _) in zip(results, outcomes, strict=True):
        w = written.get(res.path)
        if w is not None and w.changed:
            forget(res.path, list(plan.restored))
        final.append(
            FileSwitch(
                res.path, res.kind, res.old_mode, res.new_mode, bool(w and w.changed), res.diff, w.backup if w else None
            )
        )
    return final
