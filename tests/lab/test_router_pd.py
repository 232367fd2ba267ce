"""An existing PD router as the split upstream: SGLang's router (PyPI ``sglang-router``, the
pinned test extra) in front of the lab's llama.cpp servers, started and stopped by the tests on
127.0.0.1.

* regular mode over two llama.cpp workers: streamed chat completions through the router
  complete (the official ``openai`` client parses them) and both workers serve some;
* PD mode with a llama.cpp prefill worker behind kvswitch's one-token shim
  (``kvswitch.lab.prefill_shim``) and a llama.cpp decode worker: streamed requests complete and
  their first event arrives; the prefill worker generated one token per request;
* the shim itself: a streamed request becomes a one-token JSON prefill.

The router's command line is the one ``kvswitch engine-flags --router sglang`` prints for the
profile (parsed from its JSON output); only ``python`` becomes this interpreter. Each router runs
in a session of its own, and its whole process group is stopped at the end of its test, then
checked to be gone. Without ``sglang-router`` the router tests skip, but fail under CI."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import re
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kvswitch.lab.llama import LlamaServer
from kvswitch.lab.prefill_shim import PrefillShim, PrefillShimError, prefill_body
from tests.clientenv import cli, init
from tests.lab.conftest import THREADS
from tests.lab.support import MODEL_NAME, http_get, http_post, ok, streams, words

pytestmark = pytest.mark.slow

STARTUP = 60.0
"""Seconds a router or the shim may take to be ready (about 3 s measured)."""


def require_router() -> None:
    """Skip without ``sglang-router``, but fail under CI (the test extra installs it)."""
    if importlib.util.find_spec("sglang_router") is None:
        message = "sglang-router is not installed (tests/run.py installs it with the test extra)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def predicted(server: LlamaServer) -> float:
    """The tokens a llama.cpp server has generated so far (its Prometheus counter)."""
    _, body = http_get(f"{server.url}/metrics")
    found = re.search(r"^llamacpp:tokens_predicted_total (\S+)$", body.decode(), re.M)
    assert found, body[:500]
    return float(found.group(1))


def flag(argv: list[str], name: str) -> list[str]:
    """The values after ``name`` in ``argv`` (up to the next flag)."""
    i = argv.index(name) + 1
    out = []
    while i < len(argv) and not argv[i].startswith("--"):
        out.append(argv[i])
        i += 1
    return out


# -- processes -------------------------------------------------------------------------------
def stop_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM the process's whole group (SIGKILL after 15 s); then nothing of it is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while True:  # a child the leader left behind would still be in the group
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < deadline, f"processes of group {proc.pid} are still running"
        time.sleep(0.05)


def log_tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path


@contextlib.contextmanager
def router_running(argv: list[str], log: Path) -> Iterator[Running]:
    """Start ``argv`` in a session of its own; ready once ``GET /readiness`` answers 200."""
    url = f"http://127.0.0.1:{flag(argv, '--port')[0]}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            assert proc.poll() is None, f"the router exited ({proc.returncode}):\n{log_tail(log)}"
            with contextlib.suppress(OSError):
                if http_get(f"{url}/readiness")[0] == 200:
                    break
            assert time.monotonic() < deadline, f"the router was not ready in {STARTUP:g} s:\n{log_tail(log)}"
            time.sleep(0.1)
        yield Running(proc, url, log)
    finally:
        stop_group(proc)


def read_listening(proc: subprocess.Popen[str], what: str) -> str:
    """The URL of a ``LISTENING <url>`` line the process prints once bound."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(STARTUP):
            raise AssertionError(f"{what} printed nothing in {STARTUP:g} s")
    line = proc.stdout.readline()
    assert line.startswith("LISTENING "), f"{what}: {line!r} (exit {proc.poll()})"
    return line.split()[1]


# -- the servers -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workers(tiny_model: Path, lab_dir: Path) -> Iterator[tuple[LlamaServer, LlamaServer]]:
    """Two llama.cpp servers (the lab's tiny model): A and B."""
    servers = tuple(
        LlamaServer(
            tiny_model,
            port=0,
            ctx_size=2048,
            parallel=2,
            threads=THREADS,
            metrics=True,
            alias=MODEL_NAME,
            log_path=lab_dir / f"pd-router-worker-{i}.log",
        )
        for i in range(2)
    )
    try:
        for server in servers:
            server.start()
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()


@pytest.fixture(scope="module")
def shim(workers: tuple[LlamaServer, LlamaServer], lab_dir: Path) -> Iterator[str]:
    """``python -m kvswitch.lab.prefill_shim`` in front of worker A: its URL."""
    log = lab_dir / "prefill-shim.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kvswitch.lab.prefill_shim", "--upstream", workers[0].url, "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    try:
        yield read_listening(proc, "the prefill shim")
    finally:
        stop_group(proc)
        assert proc.stdout is not None
        proc.stdout.close()


def router_argv(*, prefill: str, decode: str, mode: str, policy: str) -> list[str]:
    """The router command ``kvswitch engine-flags`` prints for a profile whose split URL is a
    free port and whose prefill and decode URLs are ``prefill`` and ``decode``."""
    init(preset="vllm", model=MODEL_NAME, profile="lab")
    split = f"http://127.0.0.1:{free_port()}/v1"
    edit = cli(
        "profile",
        "edit",
        "lab",
        "--split-url",
        split,
        "--prefill-base-url",
        f"{prefill}/v1",
        "--decode-base-url",
        f"{decode}/v1",
    )
    assert edit.rc == 0, edit
    out = cli(
        "engine-flags",
        "--engine",
        "sglang",
        "--mode",
        "split",
        "--router",
        "sglang",
        "--router-mode",
        mode,
        "--router-policy",
        policy,
        "--router-metrics-port",
        str(free_port()),
        "--format",
        "json",
    )
    assert out.rc == 0, out
    data = json.loads(out.out)["data"]  # kvswitch's JSON envelope
    assert (data["router"], data["router_mode"]) == ("sglang", mode)
    (router,) = (c for c in data["commands"] if c["role"] == "router")
    assert router["url"] == split
    argv: list[str] = router["argv"]
    assert shlex.split(router["shell"]) == argv  # the line a user copies is the same command
    assert argv[:3] == ["python", "-m", "sglang_router.launch_router"]
    assert flag(argv, "--host") == flag(argv, "--prometheus-host") == ["127.0.0.1"]
    assert flag(argv, "--port") == [split.split(":")[2].split("/")[0]]
    return [sys.executable, *argv[1:]]


# -- the tests ---------------------------------------------------------------------------------
def test_regular_mode_over_two_llama_workers(workers: tuple[LlamaServer, LlamaServer], lab_dir: Path) -> None:
    import openai

    require_router()
    a, b = workers
    argv = router_argv(prefill=a.url, decode=b.url, mode="regular", policy="round_robin")
    assert flag(argv, "--worker-urls") == [a.url, b.url]
    assert "--pd-disaggregation" not in argv
    before = {s.url: predicted(s) for s in workers}
    with router_running(argv, lab_dir / "router-regular.log") as router:
        client = openai.OpenAI(
            base_url=f"{router.url}/v1",
            api_key="unused",
            max_retries=0,
            timeout=60,
            http_client=openai.DefaultHttpxClient(trust_env=False),
        )
        with client:
            for i in range(4):
                stream = client.chat.completions.create(
                    model=MODEL_NAME,
                    messages=[{"role": "user", "content": words(12, i)}],
                    max_tokens=6,
                    stream=True,
                    extra_body={"ignore_eos": True},
                )
                chunks = list(stream)
                text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                assert text.strip(), chunks
                assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
        status, body = http_get(f"http://127.0.0.1:{flag(argv, '--prometheus-port')[0]}/metrics")
        assert status == 200 and b'path="/v1/chat/completions"' in body
    served = {s.url: predicted(s) - before[s.url] for s in workers}
    assert all(n > 0 for n in served.values()), served
    assert sum(served.values()) == 4 * 6


def test_pd_mode_with_a_llama_prefill_behind_the_shim(
    workers: tuple[LlamaServer, LlamaServer], shim: str, lab_dir: Path
) -> None:
    require_router()
    a, b = workers
    argv = router_argv(prefill=shim, decode=b.url, mode="pd", policy="cache_aware")
    assert "--pd-disaggregation" in argv
    assert flag(argv, "--prefill") == [shim, "8998"] and flag(argv, "--decode") == [b.url]
    before = {s.url: predicted(s) for s in workers}
    with router_running(argv, lab_dir / "router-pd.log") as router:
        results = ok(
            streams(router.url, [words(40, 100 + i) for i in range(3)], max_tokens=8, extra={"ignore_eos": True})
        )
    for result in results:
        assert result.first_event is not None and result.ttft is not None  # the first event arrived
        assert result.done and result.token_events > 0
    assert predicted(a) - before[a.url] == 3  # the prefill worker: one token per request
    assert predicted(b) - before[b.url] == 3 * 8  # the decode worker: the answers


def test_the_shim_turns_a_streamed_request_into_a_one_token_prefill(
    workers: tuple[LlamaServer, LlamaServer], shim: str
) -> None:
    body = {
        "model": MODEL_NAME,
        "messages": [{"role": "user", "content": words(20, 7)}],
        "max_tokens": 9,
        "max_completion_tokens": 9,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    answer = http_post(f"{shim}/v1/chat/completions", body)
    assert answer["object"] == "chat.completion"
    assert answer["usage"]["completion_tokens"] == 1  # type: ignore[index]
    status, health = http_get(f"{shim}/health")  # anything else passes through
    assert status == 200 and json.loads(health) == json.loads(http_get(f"{workers[0].url}/health")[1])
    with pytest.raises(urllib.error.HTTPError) as refused:
        http_post(f"{shim}/v1/completions", ["not", "an", "object"])  # type: ignore[arg-type]
    assert refused.value.code == 400
    refused.value.close()


def test_prefill_body_keeps_everything_but_length_and_streaming() -> None:
    body = {
        "model": "m",
        "messages": [],
        "max_tokens": 64,
        "max_completion_tokens": 64,
        "n_predict": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
        "bootstrap_room": 7,
        "temperature": 0,
    }
    assert prefill_body(body) == {
        "model": "m",
        "messages": [],
        "max_tokens": 1,
        "stream": False,
        "bootstrap_room": 7,
        "temperature": 0,
    }
    assert body["max_tokens"] == 64  # the caller's body is left as it was


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1:1", "http://127.0.0.1:1/v1", "http://user:pw@127.0.0.1:1", "127.0.0.1:1"]
)
def test_the_shim_takes_only_a_plain_http_origin(url: str) -> None:
    with pytest.raises(PrefillShimError, match="plain http://host:port"):
        PrefillShim(url)


def test_a_shim_whose_server_is_gone_answers_502() -> None:
    async def run() -> tuple[int, dict[str, Any], int]:
        shim = PrefillShim(f"http://127.0.0.1:{free_port()}")
        await shim.start()
        try:
            status, answer = await asyncio.to_thread(_post_status, f"{shim.url}/v1/chat/completions", {"messages": []})
            return status, answer, shim.prefills
        finally:
            await shim.close()

    status, answer, prefills = asyncio.run(run())
    assert status == 502 and answer["error"]["type"] == "upstream_error"
    assert prefills == 1


def _post_status(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    try:
        return 200, http_post(url, body)
    except urllib.error.HTTPError as exc:
        with exc:
            data: dict[str, Any] = json.loads(exc.read())
            return exc.code, data


def test_the_pd_router_as_the_gateways_split_upstream(
    workers: tuple[LlamaServer, LlamaServer], shim: str, lab_dir: Path
) -> None:
    """kvswitch's gateway with SGLang's router (PD mode) as its split upstream: a Chat request
    on /split goes through the router; Claude Code's API (Messages, which the router lacks) is
    translated and reaches it too; merged requests go to worker A alone."""
    import anthropic
    import openai

    from kvswitch.gateway.server import REPLY_HEADER, Gateway
    from kvswitch.gateway.settings import GatewaySettings
    from kvswitch.gateway.translating import TRANSLATED_HEADER
    from tests.gateway.conftest import Loop

    require_router()
    a, b = workers
    argv = router_argv(prefill=shim, decode=b.url, mode="pd", policy="cache_aware")
    loop = Loop()
    try:
        with router_running(argv, lab_dir / "router-gateway.log") as router:

            async def start() -> Gateway:
                gateway = Gateway(
                    GatewaySettings(merged=f"{a.url}/v1", split=f"{router.url}/v1", token="pd-test-token", port=0)
                )
                await gateway.start()
                return gateway

            gateway = loop.call(start())
            try:
                before = predicted(b)
                chat = openai.OpenAI(
                    base_url=f"{gateway.url}/split/v1",
                    api_key="pd-test-token",
                    max_retries=0,
                    timeout=60,
                    http_client=openai.DefaultHttpxClient(trust_env=False),
                )
                with chat:
                    raw = chat.chat.completions.with_raw_response.create(
                        model=MODEL_NAME,
                        messages=[{"role": "user", "content": words(20, 300)}],
                        max_tokens=5,
                        extra_body={"ignore_eos": True},
                    )
                assert raw.headers[REPLY_HEADER] == "split; reason=path"
                assert raw.parse().choices[0].message.content
                messages = anthropic.Anthropic(
                    base_url=f"{gateway.url}/split",
                    api_key="pd-test-token",
                    max_retries=0,
                    timeout=60,
                    http_client=anthropic.DefaultHttpxClient(trust_env=False),
                )
                with (
                    messages,
                    messages.messages.stream(
                        model=MODEL_NAME, max_tokens=5, messages=[{"role": "user", "content": words(20, 301)}]
                    ) as stream,
                ):
                    final = stream.get_final_message()
                    translated = stream.response.headers.get(TRANSLATED_HEADER)
                assert final.content and final.content[0].type == "text" and final.content[0].text
                assert translated is not None and translated.startswith("chat")
                assert predicted(b) - before >= 2 * 5  # both answers were decoded by the decode worker
            finally:
                loop.call(gateway.close(0.5))
    finally:
        loop.close()
