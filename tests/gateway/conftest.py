"""Real peers for the gateway: three llama.cpp servers, the lab router and a Gateway.

``peers`` (once per session, ~2 s): a tiny model generated into the session's temp folder
(nothing downloaded), then three llama.cpp servers from the ``xllamacpp`` wheel, each
``--parallel 2 --ctx-size 8192`` (4096 tokens a slot: room for the 3,000-token prompts of the
cancellation tests) with ``--batch-size 64`` (a long prompt is prefilled in ~50 steps, and
llama.cpp looks at cancellations between steps), one compute thread each:

* ``merged`` — the gateway's merged upstream, used directly (``<url>/v1``): llama.cpp serves
  all four APIs (Chat Completions, Completions, Responses, Messages);
* ``prefill`` and ``decode`` — the lab's split pair behind the lab router
  (:class:`kvswitch.lab.router.Router`, in-process), sharing a slot folder; the gateway's
  split upstream is the router's ``/split/v1``. The router's
  ``kvswitch_lab:kv_handoffs_total`` moves only for split requests.

The router and the gateway run on one event loop in a thread of their own (:class:`Loop`),
so a test drives them with the official SDKs, httpx or curl from the test's own thread, and
reads ``gateway.in_flight`` / calls ``gateway.set_mode`` on that loop. Every client here opens
a fresh connection per request (llama.cpp closes a connection after each streamed answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pytest

from kvswitch.gateway.server import Gateway
from kvswitch.gateway.settings import GatewaySettings
from kvswitch.lab.llama import LlamaServer
from kvswitch.lab.router import Router
from kvswitch.probe.metrics import parse_metrics
from tests.lab.conftest import require_lab

if TYPE_CHECKING:  # the SDKs load only in the tests that use them
    import anthropic
    import openai

T = TypeVar("T")

TOKEN = "kvsgw-test-token-5b7e1d0c9a8f4e62"
"""The local token clients send (a test value; never a real key)."""
MODEL = "tiny"
CTX = 8192
BATCH = 64
PARALLEL = 2


class Loop:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="gateway-peers", daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coro`` on the loop; its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def run(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        """Run a plain function on the loop's thread (between two of its steps); its result."""

        async def wrapped() -> T:
            return fn()

        return self.call(wrapped(), timeout)

    def close(self) -> None:
        async def cancel_rest() -> None:
            me = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not me]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.call(cancel_rest(), 10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@dataclass
class Peers:
    """The running peers. ``gateway`` is the shared one (merged = the merged llama server,
    split = the lab router's ``/split/v1``, default mode merged)."""

    loop: Loop
    merged: LlamaServer
    prefill: LlamaServer
    decode: LlamaServer
    router: Router
    gateway: Gateway
    slot_dir: Path
    model_path: Path

    def settings(self, **changes: Any) -> GatewaySettings:
        """The shared gateway's settings, with ``changes``."""
        base: dict[str, Any] = {
            "merged": f"{self.merged.url}/v1",
            "split": f"{self.router.url}/split/v1",
            "token": TOKEN,
            "port": 0,
            "first_byte_timeout": 120.0,
            "idle_timeout": 60.0,
            "drain_timeout": 5.0,
        }
        return GatewaySettings(**{**base, **changes})

    def start_gateway(self, settings: GatewaySettings) -> Gateway:
        """Another Gateway on the peers' loop (close it with :meth:`stop_gateway`)."""

        async def start() -> Gateway:
            gateway = Gateway(settings)
            await gateway.start()
            return gateway

        return self.loop.call(start())

    def stop_gateway(self, gateway: Gateway) -> None:
        self.loop.call(gateway.close(0.5))

    def set_mode(self, mode: str) -> str:
        return self.loop.run(lambda: self.gateway.set_mode(mode))  # type: ignore[arg-type]

    def in_flight(self, gateway: Gateway | None = None) -> int:
        g = gateway or self.gateway
        return self.loop.run(lambda: g.in_flight)


def llama_server(model: Path, folder: Path, name: str, slot_dir: Path | None = None, **kw: Any) -> LlamaServer:
    """A llama.cpp server for these tests (not started)."""
    options: dict[str, Any] = {
        "port": 0,
        "ctx_size": CTX,
        "n_batch": BATCH,
        "n_ubatch": BATCH,
        "parallel": PARALLEL,
        "threads": 1,
        "metrics": True,
        "alias": MODEL,
        "log_path": folder / f"{name}.log",
        "slot_save_path": slot_dir,
    }
    return LlamaServer(model, **{**options, **kw})


@pytest.fixture(scope="session")
def gateway_lab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway-lab")


@pytest.fixture(scope="session")
def gateway_model(gateway_lab_dir: Path) -> Path:
    require_lab()
    from kvswitch.lab.model import make_model

    return make_model(gateway_lab_dir / "tiny.gguf", preset="tiny", seed=0)


@pytest.fixture(scope="session")
def peers(gateway_model: Path, gateway_lab_dir: Path) -> Iterator[Peers]:
    slots = gateway_lab_dir / "slots"
    servers = [
        llama_server(gateway_model, gateway_lab_dir, "merged"),
        llama_server(gateway_model, gateway_lab_dir, "prefill", slots),
        llama_server(gateway_model, gateway_lab_dir, "decode", slots),
    ]
    loop: Loop | None = None
    router: Router | None = None
    gateway: Gateway | None = None
    try:
        for server in servers:
            server.start()
        merged, prefill, decode = servers
        loop = Loop()

        async def start() -> tuple[Router, Gateway]:
            r = Router(merged.url, prefill.url, decode.url, slots)
            await r.start()
            g = Gateway(
                GatewaySettings(
                    merged=f"{merged.url}/v1",
                    split=f"{r.url}/split/v1",
                    token=TOKEN,
                    port=0,
                    first_byte_timeout=120.0,
                    idle_timeout=60.0,
                    drain_timeout=5.0,
                )
            )
            await g.start()
            return r, g

        router, gateway = loop.call(start())
        yield Peers(loop, merged, prefill, decode, router, gateway, slots, gateway_model)
    finally:
        if loop is not None:
            if gateway is not None:
                with contextlib.suppress(Exception):
                    loop.call(gateway.close(1.0))
            if router is not None:
                with contextlib.suppress(Exception):
                    loop.call(router.close())
            loop.close()
        for server in servers:
            server.stop()


# -- reading the peers' own counters ---------------------------------------------------------------
def metrics(url: str) -> dict[str, float]:
    """A server's ``/metrics`` as {sample: value} (the gateway's needs the token)."""
    r = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30, trust_env=False)
    assert r.status_code == 200, r.text
    return parse_metrics(r.text)


def handoffs(peers: Peers) -> float:
    return metrics(peers.router.url)["kvswitch_lab:kv_handoffs_total"]


def llama_counts(server: LlamaServer) -> dict[str, float]:
    """A llama.cpp server's own counters: prompt tokens, predicted tokens, decode calls."""
    m = metrics(server.url)
    return {k: m[f"llamacpp:{k}"] for k in ("prompt_tokens_total", "tokens_predicted_total", "n_decode_total")}


def slots(server: LlamaServer) -> list[dict[str, Any]]:
    r = httpx.get(f"{server.url}/slots", timeout=30, trust_env=False)
    assert r.status_code == 200, r.text
    data: list[dict[str, Any]] = r.json()
    return data


def busy(server: LlamaServer) -> int:
    return sum(1 for s in slots(server) if s.get("is_processing"))


def outcome(gateway_url: str, value: str, mode: str | None = None) -> float:
    """The gateway's ``kvswitch_gateway_stream_outcome_total`` for ``value`` (summed over APIs,
    and over modes unless ``mode``)."""
    total = 0.0
    for key, v in metrics(gateway_url).items():
        if (
            key.startswith("kvswitch_gateway_stream_outcome_total{")
            and f'outcome="{value}"' in key
            and (mode is None or f'mode="{mode}"' in key)
        ):
            total += v
    return total


def wait_for(what: Callable[[], bool], timeout: float = 60.0, message: str = "") -> None:
    """Poll ``what`` until true (no timing is asserted: ``timeout`` only ends a hung test)."""
    import time

    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {message}")
        time.sleep(0.01)


def oai(base: str, key: str = TOKEN, **kw: Any) -> openai.OpenAI:
    """The official client, no retries (each error is seen once, as raised), no proxy from
    the environment (each SDK's own HTTP client class: anthropic's is httpx2's)."""
    import openai

    return openai.OpenAI(
        base_url=base,
        api_key=key,
        max_retries=0,
        timeout=120,
        http_client=openai.DefaultHttpxClient(trust_env=False),
        **kw,
    )


def ant(base: str, key: str = TOKEN, **kw: Any) -> anthropic.Anthropic:
    import anthropic

    return anthropic.Anthropic(
        base_url=base,
        api_key=key,
        max_retries=0,
        timeout=120,
        http_client=anthropic.DefaultHttpxClient(trust_env=False),
        **kw,
    )


def stream_chat(content: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    """A streamed Chat Completions body that decodes ``max_tokens`` tokens (``ignore_eos``)."""
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "stream": True,
        "ignore_eos": True,
        **extra,
    }


def client(**kw: Any) -> httpx.Client:
    """A plain HTTP client: no proxy from the environment, a new connection per request."""
    return httpx.Client(trust_env=False, timeout=120, limits=httpx.Limits(max_keepalive_connections=0), **kw)


AUTH = {"Authorization": f"Bearer {TOKEN}"}
