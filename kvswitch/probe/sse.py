"""An incremental Server-Sent Events parser working on bytes (WHATWG rules).

Events end at a blank line; lines end in LF, CRLF or a lone CR (also when a CR ends one read
and its LF starts the next); ``data:`` lines join with ``\\n``; lines starting with ``:`` are
comments (keep-alives); a BOM may start the stream; ``data:x`` without the space is legal.
A CR that ends one read ends its line at once (an LF that starts the next read is then part
of the same line end). An event still open when the stream ends is dropped, as the spec says.

Nothing a server sends can make the parser hold more than ``max_line`` bytes of an unfinished
line and ``max_event`` characters of an unfinished event: past either, :class:`SSEError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

__all__ = ["MAX_EVENT", "MAX_LINE", "SSEError", "SSEEvent", "SSEParser"]

MAX_LINE = 1 << 20
"""The longest line (bytes) the parser holds while it waits for the line's end."""

MAX_EVENT = 4 << 20
"""The most ``data`` (characters, over all its lines) one event may carry."""


class SSEError(KvswitchError, ValueError):
    """The stream broke a limit (a line or an event too long): the request fails with this reason."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its ``data`` (lines joined by ``\\n``) and ``event`` type."""

    data: str
    event: str = "message"


class SSEParser:
    """Feed bytes as they arrive; get the events completed so far."""

    __slots__ = ("_data", "_event", "_max_event", "_max_line", "_pending", "_size", "_skip_lf", "_started", "comments")

    def __init__(self, *, max_line: int = MAX_LINE, max_event: int = MAX_EVENT) -> None:
        self._max_line, self._max_event = max_line, max_event
        self._size = 0  # characters of data in the open event
        self._pending: bytes | bytearray = b""
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._started = False
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events that ``chunk`` completes."""
        if self._pending and self._started and b"\n" not in chunk and b"\r" not in chunk:
            # the open line goes on: nothing to scan again (a long line costs linear time)
            if len(self._pending) + len(chunk) > self._max_line:
                self._pending = b""
                raise SSEError(
                    tr("a line longer than {kib} KiB without a line break").format(kib=self._max_line // 1024)
                )
            if not isinstance(self._pending, bytearray):
                self._pending = bytearray(self._pending)
            self._pending += chunk
            return []
        buf = bytes(self._pending) + chunk
        if self._skip_lf and buf:
            # the previous read ended in CR: a CRLF split across reads is one line end
            buf = buf.removeprefix(b"\n")
            self._skip_lf = False
        if not self._started:
            if len(buf) < 3 and b"\xef\xbb\xbf".startswith(buf):
                self._pending = buf
                return []
            self._started = True
            buf = buf.removeprefix(b"\xef\xbb\xbf")
        out: list[SSEEvent] = []
        start = 0
        n = len(buf)
        while True:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr < 0 and lf < 0:
                break
            if cr >= 0 and (lf < 0 or cr < lf):
                if cr + 1 == n:
                    # a CR at the end of this read ends the line now (an event framed with lone CRs
                    # is dispatched at once); an LF starting the next read is then skipped
                    end, nxt = cr, cr + 1
                    self._skip_lf = True
                else:
                    end, nxt = cr, cr + (2 if buf[cr + 1 : cr + 2] == b"\n" else 1)
            else:
                end, nxt = lf, lf + 1
            self._line(buf[start:end].decode("utf-8", "replace"), out)
            start = nxt
        self._pending = buf[start:] if start else buf
        if len(self._pending) > self._max_line:
            self._pending = b""
            raise SSEError(tr("a line longer than {kib} KiB without a line break").format(kib=self._max_line // 1024))
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream: a last line without its line break still counts; an event that
        never got its blank line is dropped."""
        out: list[SSEEvent] = []
        if self._pending:
            self._line(bytes(self._pending).decode("utf-8", "replace").rstrip("\r"), out)
            self._pending = b""
        self._data, self._event, self._size = [], "", 0
        return out

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent("\n".join(self._data), self._event or "message"))
            self._data, self._event, self._size = [], "", 0
            return
        if line.startswith(":"):
            self.comments += 1
            return
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._size += len(value) + 1
            if self._size > self._max_event:
                self._data, self._size = [], 0
                raise SSEError(
                    tr("an event longer than {kib} KiB without a blank line").format(kib=self._max_event // 1024)
                )
            self._data.append(value)
        elif field == "event":
            self._event = value[:256]
        # id and retry do not matter to the probe
