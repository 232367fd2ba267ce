"""Linting and fixing files: read, parse, check; apply the fixable findings."""

from __future__ import annotations

from pathlib import Path

from kvswitch.diagnostics import Diagnostic, Severity
from kvswitch.document import ConfigFile, parse_config
from kvswitch.edits import Set
from kvswitch.errors import ConfigParseError, EditError, Location
from kvswitch.i18n import tr
from kvswitch.literals import FileKind
from kvswitch.records import field, record

__all__ = ["FixResult", "LintResult", "fix", "fixed_text", "lint", "lint_text"]


@record
class LintResult:
    """The findings for one file."""

    path: Path | None
    kind: FileKind | None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]


@record
class FixResult:
    """What ``fix_file`` changed (``fixed``) and what is left (``remaining``)."""

    path: Path
    changed: bool
    fixed: list[Diagnostic]
    remaining: list[Diagnostic]
    backup: Path | None = None


def _parse_diag(exc: ConfigParseError) -> Diagnostic:
    loc = exc.location or Location()
    return Diagnostic("KVS001", Severity.ERROR, exc.message, loc.path, loc.line or 1, loc.column or 1)


def lint_text(
    raw: bytes | str, kind: FileKind | None = None, path: Path | None = None, *, git: bool = True
) -> tuple[ConfigFile | None, LintResult]:
    """Lint content; a parse failure is a KVS001 finding, not an exception."""
    from kvswitch.rules import check

    try:
        cf = parse_config(raw, kind, path)
    except ConfigParseError as exc:
        return None, LintResult(path, kind, [_parse_diag(exc)])
    return cf, LintResult(path, cf.kind, check(cf, git=git))


def lint(path: Path | str, kind: FileKind | None = None, *, git: bool = True) -> LintResult:
    """Every finding in the file at ``path``. Raises ReadError/UnknownKindError when the file
    cannot be read or its kind cannot be told."""
    from kvswitch.io import read_bytes

    path = Path(path)
    return lint_text(read_bytes(path), kind, path, git=git)[1]


def fixed_text(cf: ConfigFile, diags: list[Diagnostic]) -> str:
    """The text of ``cf`` with the fixes of ``diags`` applied (verified)."""
    edits = [Set(d.fix.key_path, d.fix.value) for d in diags if d.fix is not None]
    try:
        return cf.doc.apply(edits)
    except (ValueError, TypeError, KeyError) as exc:
        message = tr("the fixes could not be applied safely, nothing was written: {error}").format(error=exc)
        raise EditError(message, Location(cf.path)) from exc


def fix(path: Path | str, kind: FileKind | None = None, *, git: bool = True) -> FixResult:
    """Apply every fixable finding (KVS101, KVS201, KVS210) through the span editor and
    :func:`~kvswitch.io.atomic_write`; the file is untouched when nothing is fixable."""
    from kvswitch.io import atomic_write, read_bytes

    path = Path(path)
    raw = read_bytes(path)
    cf, result = lint_text(raw, kind, path, git=git)
    fixable = [d for d in result.diagnostics if d.fix is not None]
    if cf is None or not fixable:
        return FixResult(path, False, [], result.diagnostics)
    new = fixed_text(cf, fixable)

    def rebuild(current: bytes) -> bytes:
        cf2, res2 = lint_text(current, cf.kind, path, git=False)
        if cf2 is None:
            raise ConfigParseError(tr("the file stopped parsing while kvswitch was fixing it"), Location(path))
        return fixed_text(cf2, [d for d in res2.diagnostics if d.fix is not None]).encode("utf-8")

    written = atomic_write(path, new.encode("utf-8"), expected=raw, rebuild=rebuild)
    if written.changed:
        from kvswitch.state import record_writes

        record_writes([path], None if written.reapplied else {path: new.encode("utf-8")}, known_only=True)
    after = lint_text(read_bytes(path), cf.kind, path, git=git)[1]
    return FixResult(path, written.changed, fixable, after.diagnostics, written.backup)
