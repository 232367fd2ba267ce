"""An incremental Server-Sent Events parser working on bytes (WHATWG rules).

Events end at a blank line; lines end in LF, CRLF or a lone CR (also when a CR ends one read
and its LF starts the next); ``data:`` lines join with ``\\n``; lines starting with ``:`` are
comments (keep-alives); a BOM may start the stream; ``data:x`` without the space is legal.
A CR that ends one read ends its line at once (an LF that starts the next read is then part
of the same line end). An event still open when the stream ends is dropped, as the spec says.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEEvent", "SSEParser"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its ``data`` (lines joined by ``\\n``) and ``event`` type."""

    data: str
    event: str = "message"


class SSEParser:
    """Feed bytes as they arrive; get the events completed so far."""

    __slots__ = ("_data", "_event", "_pending", "_skip_lf", "_started", "comments")

    def __init__(self) -> None:
        self._pending = b""
        self._skip_lf = False
        self._data: list[str] = []
        self._event = ""
        self._started = False
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events that ``chunk`` completes."""
        buf = self._pending + chunk
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
        self._pending = buf[start:]
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream: a last line without its line break still counts; an event that
        never got its blank line is dropped."""
        out: list[SSEEvent] = []
        if self._pending:
            self._line(self._pending.decode("utf-8", "replace").rstrip("\r"), out)
            self._pending = b""
        self._data, self._event = [], ""
        return out

    def _line(self, line: str, out: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                out.append(SSEEvent("\n".join(self._data), self._event or "message"))
            self._data, self._event = [], ""
            return
        if line.startswith(":"):
            self.comments += 1
            return
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        # id and retry do not matter to the probe
