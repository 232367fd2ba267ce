"""The servers of ``bench/gateway_overhead.py``, each in a process of its own: the upstreams
(kvswitch's deterministic SSE server, the lab's llama.cpp) and the proxies in front of them
(kvswitch's gateway, LiteLLM's proxy, SGLang's router, optionally the lab router).

LiteLLM's proxy goes into a virtualenv of its own under ``bench/out/`` (installed once, when
missing); SGLang's router is taken from this interpreter when it is installed there, else from
another virtualenv under ``bench/out/``. Every server binds 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kvswitch.lab.llama import terminate

__all__ = [
    "LITELLM_PIN",
    "SGLANG_PIN",
    "ArmError",
    "Server",
    "cpu_seconds",
    "ensure_litellm",
    "sglang_python",
    "start_gateway",
    "start_lab_router",
    "start_litellm",
    "start_llama",
    "start_sglang",
    "start_sse",
]

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
LITELLM_VENV = OUT / "venv-litellm"
SGLANG_VENV = OUT / "venv-sglang"
LITELLM_PIN = "litellm[proxy]==1.91.1"
SGLANG_PIN = "sglang-router==0.3.2"
LISTENING = "LISTENING "


class ArmError(RuntimeError):
    """A server did not come up (the message says which and quotes the end of its log)."""


@dataclass
class Server:
    """A started server process: ``root`` is its URL without ``/v1``."""

    name: str
    root: str
    stop_fn: Callable[[], None]
    log: Path | None = None
    version: str = ""
    pid: int | None = None

    @property
    def port(self) -> int:
        return int(self.root.rsplit(":", 1)[1].split("/", 1)[0])

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.stop_fn()


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants (Linux ``/proc``; NaN
    elsewhere): what a server spent, whatever else the machine was doing."""
    if pid is None or not Path("/proc/self/stat").exists():
        return float("nan")
    stats: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    tick = os.sysconf("SC_CLK_TCK")
    total, todo, seen = 0.0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen or p not in stats:
            continue
        seen.add(p)
        total += stats[p][1]
        todo.extend(child for child, (parent, _) in stats.items() if parent == p)
    return total / tick


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    """This environment without HTTP proxies (everything here is on 127.0.0.1)."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra)
    return env


def _tail(path: Path | None, n: int = 1500) -> str:
    if path is None or not path.exists():
        return ""
    return path.read_text(errors="replace")[-n:]


def _spawn(
    name: str,
    argv: list[str],
    log: Path,
    env: dict[str, str],
    *,
    listening: bool,
    timeout: float = 60.0,
) -> tuple[subprocess.Popen[str], str | None]:
    """Start ``argv``; with ``listening``, wait for its ``LISTENING <url>`` line (the URL)."""
    sink: IO[str] = log.open("w")
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        text=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if listening else sink,
        stderr=sink,
        start_new_session=True,
    )
    if not listening:
        return proc, None
    assert proc.stdout is not None
    found: list[str] = []
    ready = threading.Event()

    def pump(stream: IO[str]) -> None:  # the rest of its stdout goes to the log, never blocks it
        for line in stream:
            if not found and line.startswith(LISTENING):
                found.append(line[len(LISTENING) :].strip())
                ready.set()
            else:
                sink.write(line)
                sink.flush()
        ready.set()

    threading.Thread(target=pump, args=(proc.stdout,), daemon=True).start()
    if not ready.wait(timeout) or not found:
        terminate(proc)
        raise ArmError(f"{name} did not print its LISTENING line within {timeout:g} s:\n{_tail(log)}")
    return proc, found[0]


def _wait_http(
    name: str, url: str, proc: subprocess.Popen[Any] | None, log: Path | None, timeout: float = 90.0
) -> None:
    """Poll ``url`` until it answers 200."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ArmError(f"{name} exited with status {proc.returncode}:\n{_tail(log)}")
        try:
            with opener.open(url, timeout=2) as resp:
                if resp.status == 200:
                    return
                last = f"HTTP {resp.status}"
        except Exception as exc:  # noqa: BLE001 - not up yet, whatever the reason
            last = str(exc)
        time.sleep(0.1)
    raise ArmError(f"{name} did not answer {url} within {timeout:g} s ({last}):\n{_tail(log)}")


def _version(python: str | Path, dist: str) -> str:
    out = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() if out.returncode == 0 else ""


# -- installs (before any timing) ------------------------------------------------------------------
def _venv_install(venv: Path, pin: str, log: Path, say: Callable[[str], None]) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        say(f"creating {venv.relative_to(ROOT)} (python3 -m venv)")
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    say(f"installing {pin} into {venv.relative_to(ROOT)} (once; log: {log.relative_to(ROOT)})")
    with log.open("a") as sink:
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", pin],
            stdout=sink,
            stderr=sink,
            check=False,
        )
    if done.returncode != 0:
        raise ArmError(f"pip install {pin} failed (status {done.returncode}):\n{_tail(log)}")
    return python


def ensure_litellm(say: Callable[[str], None]) -> Path:
    """``bench/out/venv-litellm/bin/litellm`` at the pinned version, installed when missing."""
    OUT.mkdir(parents=True, exist_ok=True)
    want = LITELLM_PIN.split("==")[1]
    python = LITELLM_VENV / "bin" / "python"
    if not python.exists() or _version(python, "litellm") != want:
        _venv_install(LITELLM_VENV, LITELLM_PIN, OUT / "venv-litellm-install.log", say)
    return LITELLM_VENV / "bin" / "litellm"


def sglang_python(say: Callable[[str], None]) -> Path:
    """A Python that can ``import sglang_router``: this one, else ``bench/out/venv-sglang``'s
    (installed there when missing)."""
    if importlib.util.find_spec("sglang_router") is not None:
        return Path(sys.executable)
    python = SGLANG_VENV / "bin" / "python"
    if not python.exists() or not _version(python, "sglang-router"):
        _venv_install(SGLANG_VENV, SGLANG_PIN, OUT / "venv-sglang-install.log", say)
    return python


# -- upstreams -------------------------------------------------------------------------------------
def start_sse(
    logs: Path,
    *,
    ttft_ms: float,
    itl_ms: float,
    tokens: int,
    scenario: str = "ok",
    name: str = "sse",
) -> Server:
    """kvswitch's deterministic SSE server (``kvswitch.testing.sse_server``)."""
    log = logs / f"{name}.log"
    argv = [
        sys.executable,
        "-m",
        "kvswitch.testing.sse_server",
        "--port",
        "0",
        "--ttft-ms",
        str(ttft_ms),
        "--itl-ms",
        str(itl_ms),
        "--tokens",
        str(tokens),
        "--scenario",
        scenario,
    ]
    proc, url = _spawn(name, argv, log, child_env(), listening=True)
    assert url is not None
    return Server(name, url.removesuffix("/v1"), lambda: terminate(proc), log, pid=proc.pid)


def start_llama(logs: Path, *, parallel: int, alias: str) -> Server:
    """The lab's llama.cpp server (``kvswitch.lab.llama``) serving the generated tiny model."""
    from kvswitch.lab.llama import LlamaServer
    from kvswitch.lab.model import make_model

    model = make_model(logs / "tiny.gguf", preset="tiny", seed=0)
    # one compute thread: on a 2-core machine two stall on any busy neighbour
    # (tests/lab/conftest.py)
    server = LlamaServer(
        model,
        port=0,
        ctx_size=4096,
        n_batch=512,
        n_ubatch=512,
        parallel=parallel,
        threads=1,
        metrics=True,
        alias=alias,
        log_path=logs / "llama.log",
    )
    server.start()
    return Server(
        "llama.cpp",
        server.url.removesuffix("/v1"),
        lambda: server.stop(),
        logs / "llama.log",
        _version(sys.executable, "xllamacpp"),
        server.pid,
    )


# -- proxies ---------------------------------------------------------------------------------------
def start_gateway(logs: Path, upstream: str, token: str, tag: str) -> Server:
    """``python -m kvswitch.gateway.server --port 0 --merged URL/v1 --split URL/v1`` (token from the
    environment), with its state and config folders in ``logs`` so nothing of the user's is read."""
    log = logs / f"kvswitch-{tag}.log"
    home = logs / f"kvswitch-{tag}-home"
    home.mkdir(exist_ok=True)
    env = child_env(
        KVSWITCH_GATEWAY_TOKEN=token,
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
    )
    argv = [
        sys.executable,
        "-m",
        "kvswitch.gateway.server",
        "--port",
        "0",
        "--merged",
        f"{upstream}/v1",
        "--split",
        f"{upstream}/v1",
    ]
    proc, url = _spawn("kvswitch gateway", argv, log, env, listening=True)
    assert url is not None
    root = url.rstrip("/").removesuffix("/v1")
    _wait_http("kvswitch gateway", f"{root}/health", proc, log)
    return Server(
        "kvswitch",
        root,
        lambda: terminate(proc),
        log,
        _version(sys.executable, "kvswitch"),
        proc.pid,
    )


def start_litellm(logs: Path, litellm: Path, upstream: str, model: str, tag: str) -> Server:
    """LiteLLM's proxy (one worker, its defaults) with one model: ``openai/<model>`` at the
    upstream."""
    log = logs / f"litellm-{tag}.log"
    home = logs / f"litellm-{tag}-home"
    home.mkdir(exist_ok=True)
    config = logs / f"litellm-{tag}.yaml"
    config.write_text(
        json.dumps(
            {  # JSON is YAML
                "model_list": [
                    {
                        "model_name": model,
                        "litellm_params": {
                            "model": f"openai/{model}",
                            "api_base": f"{upstream}/v1",
                            "api_key": "none",
                        },
                    }
                ],
                "litellm_settings": {"telemetry": False},
            },
            indent=1,
        )
    )
    port = free_port()
    env = child_env(
        HOME=str(home),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        DISABLE_ADMIN_UI="True",
    )
    argv = [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    proc, _ = _spawn("LiteLLM", argv, log, env, listening=False)
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_http("LiteLLM", f"{root}/health/liveliness", proc, log, timeout=180)
    except ArmError:
        terminate(proc)
        raise
    return Server(
        "litellm",
        root,
        lambda: terminate(proc),
        log,
        _version(litellm.parent / "python", "litellm"),
        proc.pid,
    )


def start_sglang(logs: Path, python: Path, upstream: str, tag: str) -> Server:
    """SGLang's router (Rust), regular mode, one worker: the upstream."""
    log = logs / f"sglang-{tag}.log"
    port, metrics = free_port(), free_port()
    argv = [
        str(python),
        "-m",
        "sglang_router.launch_router",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--prometheus-host",
        "127.0.0.1",
        "--prometheus-port",
        str(metrics),
        "--worker-urls",
        upstream,
        "--policy",
        "round_robin",
        "--worker-startup-check-interval",
        "1",
        "--health-check-interval-secs",
        "2",
        "--log-level",
        "warn",
    ]
    proc, _ = _spawn("SGLang router", argv, log, child_env(), listening=False)
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_http("SGLang router", f"{root}/readiness", proc, log)
    except ArmError:
        terminate(proc)
        raise
    return Server("sglang", root, lambda: terminate(proc), log, _version(python, "sglang-router"), proc.pid)


def start_lab_router(logs: Path, upstream: str, tag: str) -> Server:
    """kvswitch's lab router (merged route), through bench/http_stack.py's launcher."""
    log = logs / f"lab-router-{tag}.log"
    port = free_port()
    argv = [
        sys.executable,
        str(ROOT / "bench" / "http_stack.py"),
        "--serve",
        "lab-router",
        "--port",
        str(port),
        "--upstream",
        upstream,
    ]
    proc, _ = _spawn("lab router", argv, log, child_env(), listening=False)
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                terminate(proc)
                raise ArmError(f"the lab router did not listen:\n{_tail(log)}") from None
            time.sleep(0.05)
    return Server("lab-router", root, lambda: terminate(proc), log, pid=proc.pid)
