"""A raw HTTP/1.1 client for the hostile tests of the lab router and the gateway.

:func:`exchange` speaks raw bytes to a server on 127.0.0.1 and :class:`Reply` reads its answer
(status, headers, a chunked body decoded). :func:`accepted` counts what reached a listener that
must receive nothing (the ``bystander`` fixture of ``tests/conftest.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    data: bytes
    closed: bool  # the server closed the connection (EOF) within the wait

    @property
    def head(self) -> bytes:
        return self.data.partition(b"\r\n\r\n")[0]

    @property
    def status(self) -> int:
        line = self.data.split(b"\r\n", 1)[0].split()
        return int(line[1]) if len(line) > 1 and line[1].isdigit() else 0

    def header(self, name: str) -> str | None:
        for line in self.head.decode("latin-1").split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None

    def headers(self) -> set[str]:
        return {line.partition(":")[0].strip().lower() for line in self.head.decode("latin-1").split("\r\n")[1:]}

    @property
    def body(self) -> bytes:
        """The body, a chunked one decoded (as far as it came)."""
        raw = self.data.partition(b"\r\n\r\n")[2]
        if (self.header("Transfer-Encoding") or "").lower() != "chunked":
            return raw
        out = bytearray()
        while raw:
            size, sep, rest = raw.partition(b"\r\n")
            if not sep:
                break
            n = int(size.split(b";")[0], 16)
            if n == 0:
                break
            out += rest[:n]
            raw = rest[n + 2 :]
        return bytes(out)

    @property
    def complete(self) -> bool:
        """A chunked body that came with its last chunk."""
        return self.data.endswith(b"0\r\n\r\n")

    def json(self) -> Any:
        return json.loads(self.body)


async def exchange(port: int, data: bytes, *, wait: float = 5.0) -> Reply:
    """Send ``data``, read until the server closes the connection or ``wait`` passes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        got = bytearray()
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            try:
                part = await asyncio.wait_for(reader.read(65536), left)
            except TimeoutError:
                break
            except ConnectionError:
                return Reply(bytes(got), True)
            if not part:
                return Reply(bytes(got), True)
            got += part
        return Reply(bytes(got), False)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def accepted(sock: socket.socket) -> int:
    """Connections waiting on the non-blocking listener ``sock`` (each accepted and closed)."""
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1
