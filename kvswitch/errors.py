"""The one exception tree of kvswitch.

Every exception class kvswitch defines is a :class:`KvswitchError`. The public ones, with the
module that defines each (this one when none is named)::

    KvswitchError                 root; carries an optional Location
    ├── ConfigError               a file's content is wrong
    │   ├── ConfigParseError      it does not parse (KVS001)
    │   ├── ConfigValidationError it parses but fails validation (has .diagnostics)
    │   ├── UnknownKindError      kvswitch cannot tell which kind of file it is
    │   └── ConfigVersionError    kvswitch's own config is from a newer kvswitch
    ├── EditError                 an edit cannot be applied (wrong shape, verify-after-write mismatch)
    ├── LockTimeoutError          another kvswitch holds the switch lock past the wait
    ├── CcSwitchError             CC Switch's database cannot be imported (refused; nothing read)
    │   ├── CcSwitchBusyError     CC Switch is writing it right now: try again
    │   └── CcSwitchReadError     it cannot be read at all (also a ReadError)
    ├── ImportRefusedError        an import found nothing to turn into a profile, or would replace one
    ├── FileAccessError           the file system said no
    │   ├── ReadError             cannot read (missing, permission, not a file, not UTF-8)
    │   └── WriteError            cannot write (permission, disk full, read-only)
    │       └── ChangedOnDiskError  the file changed under us and the edit could not be re-applied
    │           └── RacedError    (io) a save landed between the last look and the swap
    ├── UsageError                a command line the user got wrong (exit 2)
    ├── InvalidValueError         (validate) a value given to kvswitch cannot be used; has lint's .code
    ├── SecretStoreError          (keys) the OS keyring cannot be used
    ├── InvalidKeyError           (keys) a key value is unusable or missing
    ├── NetworkSettingsError      (network) a proxy or CA setting in the environment cannot be used
    ├── WatcherBusyError          (watch) another watcher already runs for this KVSWITCH_HOME
    ├── ProbeSettingsError        (probe.api) probe settings that cannot be used (a usage error in the CLI)
    ├── PassiveError              (probe.passive) a running gateway's samples cannot be read
    │   └── NoTrafficError        (probe.passive) no answer passed in the window
    ├── GatewayError              (gateway.errors) the gateway cannot do what was asked
    │   ├── GatewayNotRunning     (gateway.errors) no gateway answers on the control socket
    │   └── UntranslatableError   (gateway.translate) a request the upstream's API cannot carry
    ├── LabError                  (lab.manage) the lab cannot do what was asked
    │   └── LabUnavailableError   (lab.manage) the lab extra is not installed
    ├── LlamaServerError          (lab.llama) a llama.cpp server did not come up (also a RuntimeError)
    ├── RouterError               (lab.router) the lab router cannot start as asked
    ├── PrefillShimError          (lab.prefill_shim) the prefill shim cannot start as asked
    ├── JsoncSyntaxError          (formats.jsonc_tree) not valid JSONC, at .offset (also a ValueError)
    ├── TomlSyntaxError           (formats.toml) not valid TOML, at .line/.column (also a ValueError)
    ├── SSEError                  (probe.sse) a stream broke a limit (also a ValueError)
    ├── BadResponse               (probe.transport) an answer breaks HTTP/1.1 framing or a cap (also an httpx error)
    └── AnswerTooLarge            (http_serving) an upstream's answer over the cap (also a ValueError)

Module-private signals, never raised to callers, are under the root too: ``_Unread``
(gateway.auto), ``_Answer`` (gateway.server), ``_Refused`` and ``_Upstream`` (lab.router),
``_Refused`` (lab.prefill_shim), ``_NotFast`` (formats.jsonc_tree), ``_TooDeep`` (formats.toml).
One signal stays outside on purpose: ``_Terminated`` (cli.watch), SIGTERM interrupting the
main thread as Ctrl-C would, which an ``except KvswitchError`` on its way must not swallow.

``str(exc)`` starts with ``path:line:col:`` when those are known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvswitch.location import Location

if TYPE_CHECKING:
    from kvswitch.diagnostics import Diagnostic

__all__ = [
    "CcSwitchBusyError",
    "CcSwitchError",
    "CcSwitchReadError",
    "ChangedOnDiskError",
    "ConfigError",
    "ConfigParseError",
    "ConfigValidationError",
    "ConfigVersionError",
    "EditError",
    "FileAccessError",
    "ImportRefusedError",
    "KvswitchError",
    "Location",
    "LockTimeoutError",
    "ReadError",
    "UnknownKindError",
    "UsageError",
    "WriteError",
]


class KvswitchError(Exception):
    """Root of every error kvswitch raises on purpose."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class ConfigError(KvswitchError):
    """The content of a config file is wrong."""


class ConfigParseError(ConfigError):
    """The file does not parse; ``location`` points at the fault."""


class ConfigValidationError(ConfigError):
    """The file parses but has error-severity findings."""

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        diagnostics: tuple[Diagnostic, ...] = (),
    ) -> None:
        super().__init__(message, location)
        self.diagnostics = diagnostics


class UnknownKindError(ConfigError):
    """kvswitch cannot tell which kind of file this is (use an explicit kind)."""


class ConfigVersionError(ConfigError):
    """kvswitch's own config was written by a newer kvswitch."""


class EditError(KvswitchError):
    """An edit cannot be applied, or its result did not re-parse to the intended values."""


class LockTimeoutError(KvswitchError):
    """Another kvswitch held the switch lock for longer than the wait; nothing was done."""


class FileAccessError(KvswitchError):
    """The file system refused an operation."""


class ReadError(FileAccessError):
    """A file cannot be read at all (missing, no permission, not a file, not UTF-8)."""


class WriteError(FileAccessError):
    """A file cannot be written; the file on disk is unchanged."""


class ChangedOnDiskError(WriteError):
    """The file changed on disk while kvswitch was editing it, and the edit could not be re-applied."""


class UsageError(KvswitchError):
    """A command line the user got wrong: arguments a command cannot use (exit 2)."""


class ImportRefusedError(KvswitchError):
    """An import found nothing to turn into a profile, or would replace one; nothing was written."""


class CcSwitchError(KvswitchError):
    """CC Switch's database cannot be imported: an unknown schema, a table without the columns
    kvswitch reads; nothing was imported."""


class CcSwitchBusyError(CcSwitchError):
    """CC Switch is writing its database right now; trying again in a moment should work."""


class CcSwitchReadError(CcSwitchError, ReadError):
    """CC Switch's database cannot be read at all (missing, not a file, not SQLite)."""
