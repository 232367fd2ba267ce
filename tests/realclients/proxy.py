"""A refusing proxy for the real-client tests: it records every request it is asked to
forward (a ``CONNECT host:port`` or a plain ``GET http://host/…``) as one JSON line
(``method``, ``target``, ``host``, ``time``) and answers 403, forwarding nothing.

Clients get it in ``HTTPS_PROXY``/``HTTP_PROXY`` (``NO_PROXY=127.0.0.1,localhost``), so an
empty log means the client tried to reach no other host through its proxy settings.

Run: ``python -m tests.realclients.proxy --log FILE --port-file PORTFILE``.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.realclients.recorder import run

__all__ = ["main", "serve"]


class _Refuser(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection, then close
    log_path = Path()
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the JSON log is the record."""

    def _refuse(self) -> None:
        entry = {"method": self.command, "target": self.path, "host": self.headers.get("host", ""), "time": time.time()}
        with self.lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")
        payload = b"refused by the kvswitch test proxy\n"
        self.send_response(403)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        self.close_connection = True

    do_CONNECT = do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _refuse


def serve(log: Path, port: int = 0) -> ThreadingHTTPServer:
    """A bound (not yet serving) refusing proxy on 127.0.0.1."""
    handler = type("Refuser", (_Refuser,), {"log_path": log, "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a refusing, recording proxy")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path)
    args = parser.parse_args(argv)
    args.log.touch()
    return run(serve(args.log, args.port), args.port_file)


if __name__ == "__main__":
    raise SystemExit(main())
