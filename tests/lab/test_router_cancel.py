"""A client that goes away cancels the lab router's work in every phase (issue 13, point 6).

Real peers: three llama.cpp servers (merged, prefill, decode; one thread each) serving
the ``medium`` generated model, so that a prompt of ~3,000 tokens takes seconds to prefill, and
an in-process :class:`Router` in front of them. The client is a raw socket that sends a request
and closes when the router has reached the phase under test (the router's own hand-off record
says which). What happened upstream is read from llama.cpp's own counters —
``llamacpp:prompt_tokens_total`` and ``llamacpp:tokens_predicted_total`` on ``/metrics``, and
``is_processing`` on ``/slots`` — after the servers are idle again. Every wait is generous and
no assertion is about time.

What llama.cpp can stop: a stream, at its next write. It cannot stop a *silent* request (a
non-streamed one, or a stream still prefilling) before its prefill ends: it sees the closed
connection only when it has something to send. So the router streams its split prefill with
``return_progress`` (an event after every 512-token batch); a merged request still prefilling
costs its whole prefill, and no token is decoded after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from kvswitch.lab.llama import LlamaServer
from kvswitch.lab.router import HANDOFF_PREFIX, Handoff, Router
from kvswitch.probe.metrics import parse_metrics
from tests.lab import support
from tests.lab.conftest import THREADS, require_lab

PROMPT_WORDS = 3000
"""About 3,030 prompt tokens with the chat template: ~5 s of prefill for the medium model."""
WAIT = 180.0
"""Seconds any wait may take before the test gives up (never a pass/fail on time)."""


@dataclass
class Servers:
    merged: LlamaServer
    prefill: LlamaServer
    decode: LlamaServer
    slots: Path

    def router(self, prefill_slots: int = 1) -> Router:
        return Router(
            self.merged.url, self.prefill.url, self.decode.url, self.slots, prefill_slots=prefill_slots, decode_slots=1
        )


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    require_lab()
    from kvswitch.lab.model import make_model

    root = tmp_path_factory.mktemp("cancel-lab")
    slots = root / "slots"
    slots.mkdir()
    model = make_model(root / "medium.gguf", preset="medium", seed=0)
    started: list[LlamaServer] = []
    try:
        for role in ("merged", "prefill", "decode"):
            server = LlamaServer(
                # the split pair has a second slot (the prefill server, to be busy beside a
                # request; the decode server must be shaped alike to restore its slot files)
                model,
                port=0,
                ctx_size=4096 if role == "merged" else 8192,
                n_batch=512,
                n_ubatch=512,
                parallel=1 if role == "merged" else 2,
                threads=THREADS,
                metrics=True,
                alias=support.MODEL_NAME,
                slot_save_path=slots if role != "merged" else None,
                log_path=root / f"{role}.log",
            )
            started.append(server.start())
        yield Servers(*started, slots)
    finally:
        for server in started:
            server.stop()


# -- llama.cpp's own view -------------------------------------------------------------------------
@dataclass(frozen=True)
class Counters:
    prompt: float
    predicted: float

    def __sub__(self, other: Counters) -> Counters:
        return Counters(self.prompt - other.prompt, self.predicted - other.predicted)


async def counters(server: LlamaServer) -> Counters:
    """The server's totals once it is idle (no slot processing)."""
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        deadline = time.monotonic() + WAIT
        while True:
            slots = (await client.get(f"{server.url}/slots")).json()
            if not any(s.get("is_processing") for s in slots):
                break
            assert time.monotonic() < deadline, f"{server.url} still busy after {WAIT:g} s"
            await asyncio.sleep(0.05)
        m = parse_metrics((await client.get(f"{server.url}/metrics")).text)
    return Counters(m["llamacpp:prompt_tokens_total"], m["llamacpp:tokens_predicted_total"])


async def totals(s: Servers) -> dict[str, Counters]:
    return {
        "merged": await counters(s.merged),
        "prefill": await counters(s.prefill),
        "decode": await counters(s.decode),
    }


def slot_files(s: Servers) -> list[str]:
    return sorted(p.name for p in s.slots.glob(HANDOFF_PREFIX + "*"))


# -- a client that leaves ---------------------------------------------------------------------------
def body(prompt: str, max_tokens: int) -> bytes:
    return json.dumps(
        {
            "model": support.MODEL_NAME,
            "stream": True,
            "max_tokens": max_tokens,
            "ignore_eos": True,
            "messages": [{"role": "user", "content": prompt}],
        }
    ).encode()


def long_prompt(seed: int) -> str:
    return f"[{support.nonce()}] " + support.words(PROMPT_WORDS, seed)


@dataclass
class Client:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()

    async def read_until(self, marker: bytes) -> bytes:
        got = b""
        async with asyncio.timeout(WAIT):
            while marker not in got:
                chunk = await self.reader.read(65536)
                assert chunk, f"the stream ended before {marker!r}: {got[-300:]!r}"
                got += chunk
        return got

    async def read_all(self) -> bytes:
        got = b""
        async with asyncio.timeout(WAIT):
            while chunk := await self.reader.read(65536):
                got += chunk
        return got


def complete(response: bytes) -> bool:
    """A whole streamed answer: ``[DONE]``, then the last chunk of the chunked body."""
    return response.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")


async def send(router: Router, mode: str, payload: bytes) -> Client:
    reader, writer = await asyncio.open_connection("127.0.0.1", router.port)
    writer.write(
        f"POST /{mode}/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nConnection: close\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    return Client(reader, writer)


async def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"not within {WAIT:g} s: {what}"
        await asyncio.sleep(0.001)


async def split_request(router: Router, payload: bytes) -> tuple[Client, Handoff]:
    """Send a split request; its hand-off record, once the router has made it."""
    before = set(id(r) for r in router.stats.recent)
    client = await send(router, "split", payload)
    found: list[Handoff] = []

    def made() -> bool:
        found[:] = [r for r in router.stats.recent if id(r) not in before]
        return bool(found)

    await until(made, "the router's hand-off record")
    return client, found[0]


async def ended(record: Handoff) -> None:
    await until(lambda: record.total_ms is not None, f"the end of hand-off {record.id}")


async def next_split_is_served(router: Router, s: Servers) -> None:
    """No slot leaked: a next split request is served on the same (single) slots."""
    handoffs = router.stats.handoffs
    async with httpx.AsyncClient(trust_env=False, timeout=WAIT) as client:
        r = await client.post(
            f"{router.url}/split/v1/chat/completions",
            json={
                "model": support.MODEL_NAME,
                "max_tokens": 4,
                "ignore_eos": True,
                "messages": [{"role": "user", "content": support.words(20, 9)}],
            },
        )
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"]
    assert router.stats.handoffs == handoffs + 1
    assert router._pools["prefill"].qsize() == router._slot_counts["prefill"]
    assert router._pools["decode"].qsize() == 1
    assert slot_files(s) == []


def run(s: Servers, scenario: Callable[[Router], Awaitable[None]], prefill_slots: int = 1) -> None:
    async def main() -> None:
        router = s.router(prefill_slots)
        await router.start()
        try:
            await scenario(router)
        finally:
            await router.close()

    asyncio.run(main())


# -- split ------------------------------------------------------------------------------------------
def test_split_client_leaving_during_prefill_stops_the_prefill(servers: Servers) -> None:
    async def scenario(router: Router) -> None:
        before = await totals(servers)
        client, record = await split_request(router, body(long_prompt(1), 64))
        await until(lambda: record.phase == "prefill", "the prefill")
        await asyncio.sleep(0.3)
        await client.close()
        await ended(record)
        used = await totals(servers)
        prefill, decode = used["prefill"] - before["prefill"], used["decode"] - before["decode"]
        assert record.cancelled and record.phase == "prefill", record
        # the prefill server stopped short of the prompt; nothing was handed over or decoded
        assert prefill.prompt < PROMPT_WORDS, prefill
        assert decode == Counters(0, 0) and router.stats.handoffs == 0
        assert slot_files(servers) == []
        await next_split_is_served(router, servers)

    run(servers, scenario)


def test_split_client_leaving_during_a_slot_save_leaves_no_file(servers: Servers) -> None:
    """llama.cpp cannot stop a slot save it has received, and a busy server queues it behind
    the batch it is computing: a client leaving then used to get the file deleted *before*
    llama.cpp wrote it (a slot file left behind for good). The router now lets the save
    finish, then deletes the file and returns the slot."""

    async def scenario(router: Router) -> None:
        holder, held = await split_request(router, body(long_prompt(2), 4))
        await until(lambda: held.phase == "prefill", "the other request's prefill")
        client, record = await split_request(router, body(support.words(200, 2), 8))
        await until(lambda: record.phase == "save", "the slot save")
        await client.close()
        await ended(record)
        assert record.cancelled and record.phase == "save", record
        assert complete(await holder.read_all())  # the save is done before this prefill is
        await holder.close()
        await ended(held)
        assert [f for f in slot_files(servers) if record.id in f] == []
        await next_split_is_served(router, servers)

    run(servers, scenario, prefill_slots=2)


def test_split_client_leaving_during_a_slot_restore(servers: Servers) -> None:
    """The restore is let finish (the slot is not handed to another request meanwhile), no
    decode request is sent, the file is deleted and the slots are returned."""

    async def scenario(router: Router) -> None:
        before = await counters(servers.decode)
        prompt = f"[{support.nonce()}] " + support.words(1500, 2)  # a ~25 MB slot file
        client, record = await split_request(router, body(prompt, 64))
        await until(lambda: record.phase == "restore", "the slot restore")
        # at once: the restore takes tens of ms on the server, a sleep here could outlast it on
        # a loaded machine; a close before the call is even sent takes the same path (the
        # restore is shielded and let finish)
        await client.close()
        await ended(record)
        decode = await counters(servers.decode) - before
        assert record.cancelled and record.phase == "restore", record
        assert decode == Counters(0, 0)  # no decode request was sent
        await next_split_is_served(router, servers)

    run(servers, scenario)


def test_split_client_leaving_mid_stream_stops_the_decode(servers: Servers) -> None:
    max_tokens = 1000

    async def scenario(router: Router) -> None:
        before = await totals(servers)
        client, record = await split_request(router, body(support.words(200, 3), max_tokens))
        await client.read_until(b'"content":"')  # a first token has arrived
        await client.close()
        await ended(record)
        decode = (await totals(servers))["decode"] - before["decode"]
        assert record.cancelled and record.phase == "decode", record
        assert 1 <= decode.predicted < max_tokens, decode
        await next_split_is_served(router, servers)

    run(servers, scenario)


def test_split_client_leaving_while_waiting_for_a_prefill_slot(servers: Servers) -> None:
    """The prefill slot is busy with another request's long prefill; the waiting request's
    client leaves: it never reaches a server (the counters are the other request's alone)."""

    async def scenario(router: Router) -> None:
        before = await totals(servers)
        holder, held = await split_request(router, body(long_prompt(4), 4))
        await until(lambda: held.phase == "prefill", "the holder's prefill")
        waiter, record = await split_request(router, body(support.words(300, 5), 8))
        await until(lambda: record.phase == "prefill_wait", "the wait for a prefill slot")
        await asyncio.sleep(0.3)
        await waiter.close()
        await ended(record)
        assert record.cancelled and record.prefill_slot is None, record
        assert complete(await holder.read_all())  # the holder completes
        await holder.close()
        await ended(held)
        used = await totals(servers)
        prefill, decode = used["prefill"] - before["prefill"], used["decode"] - before["decode"]
        assert held.status == 200 and not held.cancelled, held
        assert prefill.prompt == held.prefill_prompt_n  # the holder's prompt only
        assert decode.predicted == 4 and decode.prompt == held.decode_prompt_n
        await next_split_is_served(router, servers)

    run(servers, scenario)


def test_split_client_leaving_while_waiting_for_a_decode_slot(servers: Servers) -> None:
    """Every decode slot streams another answer; the waiting request (prefilled, its slot
    saved) is closed: its file is deleted and it never reaches the decode server."""
    held_tokens = 300

    async def scenario(router: Router) -> None:
        start = await counters(servers.decode)
        holder, held = await split_request(router, body(support.words(100, 6), held_tokens))
        await holder.read_until(b'"content":"')
        waiter, record = await split_request(router, body(support.words(300, 7), 8))
        await until(lambda: record.phase == "decode_wait", "the wait for a decode slot")
        await asyncio.sleep(0.3)
        await waiter.close()
        await ended(record)
        assert record.cancelled and record.decode_slot is None and record.restore_ms is None
        assert record.n_saved, record  # it had been prefilled and saved
        assert [f for f in slot_files(servers) if record.id in f] == []
        assert complete(await holder.read_all())
        await holder.close()
        await ended(held)
        decode = await counters(servers.decode) - start
        assert held.status == 200 and not held.cancelled, held
        assert decode.predicted == held_tokens and decode.prompt == held.decode_prompt_n
        await next_split_is_served(router, servers)

    run(servers, scenario)


# -- merged -----------------------------------------------------------------------------------------
def test_merged_client_leaving_before_the_first_byte(servers: Servers) -> None:
    """Nothing flows while the merged server prefills; the client leaves: the router closes
    the upstream connection, and llama.cpp decodes nothing after the prefill it cannot stop."""
    max_tokens = 200

    async def scenario(router: Router) -> None:
        before = await counters(servers.merged)
        client = await send(router, "merged", body(f"[{support.nonce()}] " + support.words(1500, 8), max_tokens))
        await until(lambda: router.stats.in_flight["merged"] == 1, "the merged request")
        await asyncio.sleep(0.3)
        await client.close()
        await until(lambda: router.stats.in_flight["merged"] == 0, "the router's cancel")
        merged = await counters(servers.merged) - before
        assert router.stats.cancelled["merged"] == 1
        assert merged.predicted <= 2, merged  # the first token, never sent; no decoding after
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT) as c:
            r = await c.post(
                f"{router.url}/merged/v1/chat/completions",
                json={"model": support.MODEL_NAME, "max_tokens": 4, "messages": [{"role": "user", "content": "hello"}]},
            )
        assert r.status_code == 200, r.text

    run(servers, scenario)
