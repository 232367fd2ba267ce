"""llama.cpp's own HTTP server, run as a process of its own, from the ``xllamacpp`` wheel.

``xllamacpp.Server(params)`` loads a GGUF model and starts the C++ server behind the
``llama-server`` binary (``/health``, ``/v1/chat/completions`` with SSE, ``/metrics``,
``/slots``, ``/tokenize`` …) on native threads. This module is two things:

* a process entry point with llama-server-style flags::

    python -m kvswitch.lab.llama --model tiny.gguf --host 127.0.0.1 --port 8090 \\
        --ctx-size 4096 --batch-size 512 --ubatch-size 512 --parallel 2 --threads 2 --metrics \\
        [--slot-save-path DIR] [--cpus 0,1] [--grammar GBNF]

  It prints one line ``LISTENING <url>`` on stdout once the model is loaded and the port is
  bound (``--port 0`` binds a free port; the line tells which), logs to stderr, and exits on
  SIGTERM or SIGINT;
* :class:`LlamaServer`, which starts that process, waits for ``/health`` and stops exactly
  the process it started. Only the child process imports ``xllamacpp``.

``--ctx-size`` is the total number of KV cells; llama.cpp splits it evenly across the
``--parallel`` slots (4096 with 2 slots = 2048 tokens per request).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import importlib.util
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Collection, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit

from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

__all__ = ["LlamaServer", "LlamaServerError", "available", "main", "terminate"]

LISTENING = "LISTENING"


def terminate(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int:
    """SIGTERM a child process, SIGKILL after ``timeout`` s; its exit status."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def available() -> bool:
    """Whether the ``xllamacpp`` wheel (the ``lab`` extra) is installed."""
    return importlib.util.find_spec("xllamacpp") is not None


class LlamaServerError(KvswitchError, RuntimeError):
    """The server did not come up (the message carries the end of its log)."""


class LlamaServer:
    """A llama.cpp server process serving ``model_path`` on ``host:port``.

    ``port=0`` lets the server bind a free port (no race); :attr:`url` tells which once
    :meth:`start` returns. Logs go to ``log_path`` when given, else to an anonymous temporary
    file whose end is quoted when the server fails to start. Use as a context manager, or call
    :meth:`start` and :meth:`stop`; a server still running when the interpreter exits is
    killed then."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ctx_size: int = 4096,
        n_batch: int = 512,
        n_ubatch: int = 512,
        parallel: int = 2,
        threads: int = 2,
        threads_batch: int | None = None,
        slot_save_path: str | Path | None = None,
        metrics: bool = True,
        cont_batching: bool = True,
        alias: str | None = None,
        log_path: str | Path | None = None,
        extra_args: Sequence[str] = (),
        python: str | None = None,
        startup_timeout: float = 60.0,
        cpus: Collection[int] | None = None,
        start_new_session: bool = False,
        grammar: str | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.host = host
        self.port = port
        self.ctx_size = ctx_size
        self.n_batch = n_batch
        self.n_ubatch = n_ubatch
        self.parallel = parallel
        self.threads = threads
        self.threads_batch = threads_batch
        self.slot_save_path = Path(slot_save_path) if slot_save_path is not None else None
        self.metrics = metrics
        self.cont_batching = cont_batching
        self.alias = alias
        self.log_path = Path(log_path) if log_path is not None else None
        self.extra_args = list(extra_args)
        self.python = python or sys.executable
        self.startup_timeout = startup_timeout
        self.cpus = sorted(set(cpus)) if cpus is not None else None
        self.start_new_session = start_new_session
        self.grammar = grammar
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._url: str | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stdout_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._reader: threading.Thread | None = None
        self._finalizer: weakref.finalize[Any, LlamaServer] | None = None

    # -- what is started -------------------------------------------------------------------
    def command(self) -> list[str]:
        """The child's command line."""
        cmd = [
            self.python,
            "-m",
            "kvswitch.lab.llama",
            "--model",
            str(self.model_path),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--ctx-size",
            str(self.ctx_size),
            "--batch-size",
            str(self.n_batch),
            "--ubatch-size",
            str(self.n_ubatch),
            "--parallel",
            str(self.parallel),
            "--threads",
            str(self.threads),
        ]
        if self.threads_batch is not None:
            cmd += ["--threads-batch", str(self.threads_batch)]
        if self.metrics:
            cmd.append("--metrics")
        if self.slot_save_path is not None:
            cmd += ["--slot-save-path", str(self.slot_save_path)]
        if not self.cont_batching:
            cmd.append("--no-cont-batching")
        if self.alias:
            cmd += ["--alias", self.alias]
        if self.cpus is not None:
            cmd += ["--cpus", ",".join(str(c) for c in self.cpus)]
        if self.grammar:
            cmd += ["--grammar", self.grammar]
        return cmd + self.extra_args

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server (append ``/v1`` for OpenAI clients)."""
        if self._url is None:
            raise LlamaServerError(tr("the server is not started"))
        return self._url

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> LlamaServer:
        """Start the process and wait until ``/health`` answers 200 (``startup_timeout`` s)."""
        if self._proc is not None:
            raise LlamaServerError(tr("the server is already started"))
        if not self.model_path.is_file():
            raise LlamaServerError(tr("no model at {path}").format(path=self.model_path))
        if self.slot_save_path is not None:
            self.slot_save_path.mkdir(parents=True, exist_ok=True)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._log = os.fdopen(fd, "ab")
        else:
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            start_new_session=self.start_new_session,
        )
        self._finalizer = weakref.finalize(self, _kill, self._proc)
        self._reader = threading.Thread(target=self._read_stdout, name=f"llama-{self._proc.pid}", daemon=True)
        self._reader.start()
        try:
            deadline = time.monotonic() + self.startup_timeout
            self._url = self._wait_listening(deadline)
            self._wait_healthy(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM the server (SIGKILL after ``timeout`` s); returns its exit status."""
        proc, self._proc = self._proc, None
        code = terminate(proc, timeout) if proc is not None else None
        if self._reader is not None:  # the pipe is at EOF once the process is gone
            self._reader.join(5)
            self._reader = None
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self._url = None
        return code

    def detach(self) -> subprocess.Popen[bytes]:
        """Leave the started server running on its own: it is no longer stopped by :meth:`stop`,
        garbage collection or interpreter exit. Returns its process (``pid``, ``wait``) for
        whoever takes over; use ``start_new_session=True`` for a server that must outlive a
        terminal."""
        proc, self._proc = self._proc, None
        if proc is None:
            raise LlamaServerError(tr("the server is not started"))
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log is not None:  # the child keeps its own descriptor of the log
            self._log.close()
            self._log = None
        # the stdout reader (a daemon thread) keeps draining the pipe until the process ends
        self._reader = None
        return proc

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- internals -------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                if line.startswith(LISTENING + " "):
                    self._lines.put(line)
                else:  # llama.cpp logs to stderr; keep the end of anything else for errors
                    self._stdout_tail.append(line)
        if self._proc is not proc:  # detached (or stopping): nobody else closes the pipe
            with contextlib.suppress(OSError, ValueError):
                proc.stdout.close()
        self._lines.put(None)

    def _wait_listening(self, deadline: float) -> str:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LlamaServerError(
                    tr("no {line} line within {seconds} s").format(line=LISTENING, seconds=f"{self.startup_timeout:g}")
                    + self._log_tail()
                )
            try:
                line = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:  # stdout closed: the process is ending
                code = None
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = self._proc.wait(5) if self._proc is not None else None
                raise LlamaServerError(
                    tr("the server exited (status {status}) before listening").format(status=code) + self._log_tail()
                )
            url = line.split(" ", 1)[1].strip().rstrip("/")
            if urlsplit(url).port is None:
                raise LlamaServerError(tr("unexpected {name} line: {line}").format(name=LISTENING, line=repr(line)))
            return url

    def _wait_healthy(self, deadline: float) -> None:
        parts = urlsplit(self.url)
        last = tr("it has not answered yet")
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise LlamaServerError(tr("the server exited while starting") + self._log_tail())
            conn = http.client.HTTPConnection(parts.hostname or self.host, parts.port, timeout=2)
            try:
                conn.request("GET", "/health")
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
            except OSError as exc:
                last = f"{type(exc).__name__}: {exc}"
            finally:
                conn.close()
            time.sleep(0.05)
        raise LlamaServerError(
            tr("{url} not ready within {seconds} s ({last})").format(
                url=f"{self.url}/health", seconds=f"{self.startup_timeout:g}", last=last
            )
            + self._log_tail()
        )

    def _log_tail(self, limit: int = 3000) -> str:
        text = ""
        if self._log is not None:
            try:  # pread: the child shares this file's offset, so never seek it
                fd = self._log.fileno()
                size = os.fstat(fd).st_size
                text = os.pread(fd, min(limit, size), max(0, size - limit)).decode("utf-8", "replace")
            except (OSError, ValueError):
                text = ""
        text = "\n".join([text.strip(), *self._stdout_tail]).strip()
        return "\n" + tr("--- end of the server log ---") + f"\n{text}" if text else ""

    def __repr__(self) -> str:
        where = self._url or f"{self.host}:{self.port}"
        return f"LlamaServer({str(self.model_path)!r}, {where}, pid={self.pid})"


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Last resort (garbage collection, interpreter exit): kill the one process we started."""
    if proc.poll() is None:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


# -- the child process ---------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m kvswitch.lab.llama", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-m", "--model", required=True, help="the GGUF file to serve")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080, help="0: any free port (see the LISTENING line)")
    ap.add_argument("-c", "--ctx-size", type=int, default=4096, help="KV cells in all, split across the slots")
    ap.add_argument("-b", "--batch-size", type=int, default=512, help="n_batch: prompt tokens per step (prefill chunk)")
    ap.add_argument("-ub", "--ubatch-size", type=int, default=512, help="n_ubatch: physical micro-batch")
    ap.add_argument("-np", "--parallel", type=int, default=2, help="slots: requests served at once")
    ap.add_argument("-t", "--threads", type=int, default=2, help="CPU threads for decoding")
    ap.add_argument(
        "-tb", "--threads-batch", type=int, default=None, help="CPU threads for prefill (default: --threads)"
    )
    ap.add_argument(
        "--poll",
        type=int,
        default=None,
        help="how hard idle compute threads spin for work, 0-100 (0: they sleep; llama.cpp: 50)",
    )
    ap.add_argument("--threads-http", type=int, default=-1, help="HTTP worker threads (-1: llama.cpp's choice)")
    ap.add_argument("--metrics", action="store_true", help="serve Prometheus text on GET /metrics")
    ap.add_argument("--slot-save-path", default=None, help="directory for POST /slots/{id}?action=save|restore")
    ap.add_argument("--no-cont-batching", action="store_true", help="turn continuous batching off")
    ap.add_argument(
        "--no-cache-prompt", action="store_true", help="prefix reuse off by default (requests may still ask)"
    )
    ap.add_argument(
        "--cache-ram",
        type=int,
        default=None,
        help="MiB of host memory for llama.cpp's prompt cache across slots (0: off)",
    )
    ap.add_argument("--no-slots", action="store_true", help="do not serve GET /slots")
    ap.add_argument("--alias", default=None, help="the model name /v1/models reports")
    ap.add_argument("--no-warmup", action="store_true", help="skip llama.cpp's warm-up decode at load")
    ap.add_argument("--verbosity", type=int, default=None, help="llama.cpp's log verbosity")
    ap.add_argument(
        "--cpus",
        default=None,
        type=_cpu_list,
        help="pin the server (all its threads) to these CPUs, e.g. 0 or 0,1 (Linux)",
    )
    ap.add_argument(
        "--grammar",
        default=None,
        help="a GBNF grammar for every request that brings none of its own (llama-server's --grammar)",
    )
    return ap


def _cpu_list(text: str) -> set[int]:
    try:
        cpus = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of CPU numbers: {text!r}") from None
    if not cpus or min(cpus) < 0:
        raise argparse.ArgumentTypeError(f"not a list of CPU numbers: {text!r}")
    return cpus


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM or SIGINT (exit status 0); a model that fails to load raises."""
    args = _parser().parse_args(argv)
    if args.cpus is not None and hasattr(os, "sched_setaffinity"):
        # before llama.cpp starts a thread: every thread it makes inherits this mask
        os.sched_setaffinity(0, args.cpus)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_batch = args.batch_size
    params.n_ubatch = args.ubatch_size
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads_batch or args.threads
    params.n_threads_http = args.threads_http
    if args.poll is not None:
        params.cpuparams.poll = args.poll
        params.cpuparams_batch.poll = args.poll
    params.cont_batching = not args.no_cont_batching
    params.cache_prompt = not args.no_cache_prompt
    params.endpoint_metrics = args.metrics
    params.endpoint_slots = not args.no_slots
    params.warmup = not args.no_warmup
    if args.slot_save_path:
        # llama.cpp joins this and the file name as strings (its flag parser adds the "/")
        params.slot_save_path = str(Path(args.slot_save_path).resolve()) + os.sep
    if args.cache_ram is not None:
        params.cache_ram_mib = args.cache_ram
    if args.alias:
        params.model_alias = {args.alias}
    if args.verbosity is not None:
        params.verbosity = args.verbosity
    if args.grammar:
        params.sampling.grammar = xllamacpp.CommonGrammar(
            xllamacpp.common_grammar_type.COMMON_GRAMMAR_TYPE_USER, args.grammar
        )

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)  # loads the model, binds, starts the HTTP threads
    sys.stdout.write(f"{LISTENING} {server.listening_address}\n")
    sys.stdout.flush()
    while not stop.wait(1.0):
        pass
    del server  # stops the HTTP threads and frees the model


if __name__ == "__main__":
    main()
