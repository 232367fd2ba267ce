"""The checks that need no network: ``config`` (lint of kvswitch.toml and every registered
client), ``key-variables`` and ``chunk-size``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvswitch.doctor.checks import CHUNK, Check, paren
from kvswitch.i18n import clauses, ntr, tr

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.doctor.target import DoctorSettings
    from kvswitch.linter import LintResult

__all__ = ["CHUNK_CODES", "chunk_check", "config_check", "key_variables_check", "lint_all"]


def lint_all(s: DoctorSettings) -> tuple[Config | None, list[LintResult], list[str], Check | None]:
    """(config, lint results, files that could not be read, a config failure) — no network."""
    from kvswitch.config import client_path, config_file, read_config
    from kvswitch.errors import KvswitchError
    from kvswitch.kinds import CONFIG
    from kvswitch.linter import lint

    path = config_file()
    if not path.exists():
        if s.base_url:
            return (
                None,
                [],
                [],
                Check("config", "skip", tr("no kvswitch config at {path}; checking --base-url only").format(path=path)),
            )
        return (
            None,
            [],
            [],
            Check(
                "config",
                "fail",
                tr("kvswitch is not set up yet: no {path}").format(path=path),
                tr("run kvswitch init (or check an address with --base-url URL --model M)"),
            ),
        )
    results: list[LintResult] = []
    unreadable: list[str] = []
    try:
        results.append(lint(path, CONFIG))
    except KvswitchError as exc:
        return (
            None,
            [],
            [],
            Check(
                "config",
                "fail",
                tr("cannot read {path}: {reason}").format(path=path, reason=exc),
                tr("fix the file's permissions"),
            ),
        )
    try:
        config = read_config(path)
    except KvswitchError:
        return None, results, [], None  # the lint findings say why
    for entry in config.model.clients:
        cpath = client_path(entry)
        try:
            results.append(lint(cpath, entry.kind))
        except KvswitchError as exc:
            unreadable.append(f"{cpath}: {exc.message}")
    return config, results, unreadable, None


CHUNK_CODES = ("KVS101", "KVS103")


def _is_chunk_finding(d: Any) -> bool:
    return d.code in CHUNK_CODES and bool(d.key_path) and "chunk" in str(d.key_path[-1]).lower()


def config_check(results: list[LintResult], unreadable: list[str]) -> Check:
    """``config``: the lint findings (errors → fail, warnings → warn) and the files that could not be read."""
    diags = [d for r in results for d in r.diagnostics]
    errors = [d for d in diags if str(d.severity) == "error"]
    warnings = [d for d in diags if str(d.severity) == "warning" and not _is_chunk_finding(d)]
    files = len(results)
    what = (
        ntr("kvswitch.toml and {count} client", "kvswitch.toml and {count} clients", files - 1).format(count=files - 1)
        if files
        else tr("no files were linted")
    )
    if errors or unreadable:
        shown = [f"{d.location}: {d.code} {d.message}" for d in errors[:3]] + unreadable[:3]
        more = len(errors) + len(unreadable) - len(shown)
        fix = tr(
            "kvswitch lint --fix PATH applies the fixable ones (KVS101, KVS201, KVS210); the codes are "
            "explained in docs/diagnostics.md"
        )
        if unreadable:
            fix = clauses([fix, tr("a registered client that is gone: kvswitch client remove PATH")])
        count = len(errors) + len(unreadable)
        saw = ntr("{count} error in {what}: {found}", "{count} errors in {what}: {found}", count).format(
            count=count, what=what, found=clauses(shown)
        )
        if more > 0:
            saw += paren(tr("and {count} more").format(count=more))
        return Check("config", "fail", saw, fix)
    if warnings:
        shown = [f"{d.location}: {d.code} {d.message}" for d in warnings[:3]]
        return Check(
            "config",
            "warn",
            ntr("{count} warning in {what}: {found}", "{count} warnings in {what}: {found}", len(warnings)).format(
                count=len(warnings), what=what, found=clauses(shown)
            ),
            tr("see kvswitch lint PATH (and --fix for the fixable ones)"),
        )
    return Check("config", "pass", tr("{what}: no errors or warnings").format(what=what))


def key_variables_check(config: Config | None) -> Check:
    """Whether the variables registered clients read the active profile's key from are set
    here, to that key (D-7 keys for real clients: Codex, OpenCode)."""
    from kvswitch.errors import KvswitchError
    from kvswitch.key_variables import key_variables

    if config is None:
        return Check("key-variables", "skip", tr("no kvswitch config"))
    try:
        found = key_variables(config)
    except KvswitchError as exc:
        return Check(
            "key-variables",
            "warn",
            tr("cannot read the key to compare: {reason}").format(reason=exc),
            tr("check the keyring: kvswitch key get PROFILE"),
        )
    if not found:
        return Check("key-variables", "skip", tr("no registered client reads its key from an environment variable"))
    said = [v.describe() for v in found]
    saw = clauses([text for text, _ in said])
    if all(v.ok for v in found):
        return Check("key-variables", "pass", saw)
    return Check("key-variables", "warn", saw, clauses([fix for _, fix in said if fix]))


def chunk_check(results: list[LintResult], mode: str) -> Check:
    """``chunk-size``: chunk_size set where it is ignored (KVS103) or not a multiple of 64 (KVS101) → warn."""
    found = [d for r in results for d in r.diagnostics if _is_chunk_finding(d)]
    if not results:
        return Check("chunk-size", "skip", tr("no files were linted"), source=CHUNK)
    ignored = [d for d in found if d.code == "KVS103"]
    rounding = [d for d in found if d.code == "KVS101"]
    if not found:
        return Check(
            "chunk-size",
            "pass",
            tr(
                "no chunk_size is set where it is ignored (mode {mode}), and every chunk_size is a multiple of 64"
            ).format(mode=mode),
            source=CHUNK,
        )
    saw = [f"{d.location}: {d.message}" for d in (ignored + rounding)[:3]]
    fixes = []
    if ignored:
        fixes.append(
            tr(
                "chunk_size only takes effect in merged mode: switch to merged (kvswitch switch merged) to "
                "use it, or tune the prefill instance's own chunking (vLLM --max-num-batched-tokens / "
                "--long-prefill-token-threshold, SGLang --chunked-prefill-size)"
            )
        )
    if rounding:
        fixes.append(
            tr(
                "use a multiple of 64 (kvswitch lint --fix rounds it, 500 → 512): some endpoints require it "
                "and round silently"
            )
        )
    return Check("chunk-size", "warn", clauses(saw), clauses(fixes), CHUNK)
