"""Filler prompts: deterministic text of about N tokens, built from short technical words (the
probe's are one token each in the lab's tiny model, :mod:`kvswitch.lab.model`).

Stdlib only. The probe and doctor draw from one vocabulary; each keeps its own sequence, so that
a prompt is the same text from one version of kvswitch to the next (recorded timings stay comparable).
"""

from __future__ import annotations

__all__ = ["PROBE_WORDS", "WORDS", "filler", "prompt_words"]

PROBE_WORDS: tuple[str, ...] = (
    "cache",
    "prefill",
    "decode",
    "token",
    "batch",
    "chunk",
    "layer",
    "model",
    "server",
    "prompt",
    "stream",
    "memory",
    "transfer",
    "latency",
    "request",
    "engine",
    "kernel",
    "tensor",
    "vector",
    "matrix",
    "attention",
    "head",
    "query",
    "key",
    "value",
    "block",
)
"""The words of ``kvswitch probe``'s prompts (:func:`filler`)."""

WORDS: tuple[str, ...] = (*PROBE_WORDS, "page", "slot", "queue", "budget")
"""Every filler word: the probe's, then four more that doctor's prompts use (:func:`prompt_words`)."""


def filler(n: int, seed: int) -> str:
    """``n`` (at least 1) of the probe's words, stepping by 7 from ``seed``: the probe's prompt body."""
    return " ".join(PROBE_WORDS[(i * 7 + seed) % len(PROBE_WORDS)] for i in range(max(1, n)))


def prompt_words(n: int, seed: int) -> list[str]:
    """``n`` (at least 1) deterministic words of :data:`WORDS`; different seeds give different
    sequences (doctor's prefix-cache prompts)."""
    out = []
    x = seed * 7919 + 17
    for _ in range(max(1, n)):
        x = (x * 1103515245 + 12345) % (2**31)
        out.append(WORDS[(x >> 8) % len(WORDS)])
    return out
