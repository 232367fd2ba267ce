"""The ``prefix-cache`` check: TTFT of prompts that share more or less of a prefix against one
repeated prompt, and the verdict on recorded timings (:func:`assess_prefix_cache`, pure)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvswitch.doctor.checks import KNOWN, MEASURING, Check
from kvswitch.i18n import clauses, tr
from kvswitch.prompts import prompt_words

if TYPE_CHECKING:
    from kvswitch.doctor.network import Net
    from kvswitch.doctor.target import DoctorSettings, Target

__all__ = ["SWING", "SWING_MIN_MS", "Timing", "assess_prefix_cache", "prefix_check"]


SWING = 0.5
"""TTFT spread ((max − min) / median) above which TTFT is said to swing (S-28)..."""
SWING_MIN_MS = 30.0
"""...provided max − min is at least this many milliseconds (below it, a swing is noise)."""


def _prefix_fix() -> str:
    return tr(
        "fix the prompt or turn the prefix cache off for comparisons: kvswitch probe sends one prompt with "
        "--no-cache-bust (or a unique one per request by default); turning the cache off takes "
        "kvswitch profile edit {profile} --prefix-cache false and the server's own flag "
        "(vLLM --no-enable-prefix-caching, SGLang --disable-radix-cache)"
    )


@dataclass(frozen=True, slots=True)
class Timing:
    """One prefix-cache sample: TTFT in milliseconds and ``cached_tokens`` when reported."""

    ttft_ms: float
    cached_tokens: int | None = None


def _spread(values: Sequence[float]) -> float:
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else 0.0


def assess_prefix_cache(
    varying: Sequence[Timing], fixed: Sequence[Timing], prefix_cache: bool | None, profile: str | None = None
) -> Check:
    """The S-28 verdict from measured samples (pure, so recorded timings can be judged too).

    ``varying``: prompts that share more or less of a prefix; ``fixed``: one prompt sent
    again and again, ``fixed[0]`` being its first (cold) request. Big TTFT swings among the
    varying prompts that the repeated prompt does not show → warn (S-28)."""
    repeats = list(fixed[1:]) if len(fixed) > 2 else list(fixed)
    if len(varying) < 2 or len(repeats) < 2:
        return Check(
            "prefix-cache",
            "skip",
            tr("too few answers to compare ({varying} varying, {fixed} fixed)").format(
                varying=len(varying), fixed=len(fixed)
            ),
            source=KNOWN,
        )
    v = [t.ttft_ms for t in varying]
    r = [t.ttft_ms for t in repeats]
    vs, rs = _spread(v), _spread(r)
    cached_v = [t.cached_tokens for t in varying if t.cached_tokens is not None]
    cached_r = [t.cached_tokens for t in repeats if t.cached_tokens is not None]
    saw = tr(
        "prompts that share more or less of a prefix: TTFT {low}–{high} ms (spread {spread}); one prompt "
        "repeated: TTFT {repeat_low}–{repeat_high} ms (spread {repeat_spread})"
    ).format(
        low=f"{min(v):.0f}",
        high=f"{max(v):.0f}",
        spread=f"{vs:.0%}",
        repeat_low=f"{min(r):.0f}",
        repeat_high=f"{max(r):.0f}",
        repeat_spread=f"{rs:.0%}",
    )
    if cached_v or cached_r:
        saw = clauses(
            [
                saw,
                tr("cached_tokens: varying {varying}, repeated {repeated}").format(
                    varying=", ".join(map(str, cached_v)) or "–", repeated=", ".join(map(str, cached_r)) or "–"
                ),
            ]
        )
    else:
        saw = clauses([saw, tr("the server reports no cached_tokens")])
    partial_hits = len(set(cached_v)) > 1
    v_range, r_range = max(v) - min(v), max(r) - min(r)
    swings = vs > SWING and v_range >= SWING_MIN_MS and v_range > 2 * r_range
    name = profile or "PROFILE"
    if swings and prefix_cache is False:
        return Check(
            "prefix-cache",
            "warn",
            clauses(
                [
                    saw,
                    tr(
                        "the profile turns the prefix cache off, yet TTFT follows how much of each prompt was seen "
                        "before — "
                        "the server still caches (vLLM V1 turns it on by default)"
                    ),
                ]
            ),
            tr(
                "turn it off on the server too (vLLM --no-enable-prefix-caching, SGLang --disable-radix-cache), "
                "or fix the prompt for comparisons"
            ),
            MEASURING,
        )
    if swings or (partial_hits and vs > SWING and v_range >= SWING_MIN_MS):
        state = (
            tr("prefix cache on: TTFT swings with each prompt's cache hit rate")
            if prefix_cache
            else tr("prefix cache on or unknown: TTFT swings with each prompt's cache hit rate")
        )
        return Check("prefix-cache", "warn", clauses([saw, state]), _prefix_fix().format(profile=name), MEASURING)
    if vs > SWING and rs > SWING and r_range >= SWING_MIN_MS:
        return Check(
            "prefix-cache",
            "warn",
            clauses(
                [saw, tr("the repeated prompt swings as much, so it is not the prefix cache: load or the network")]
            ),
            tr("measure with more runs at a quieter time (kvswitch probe --runs 20)"),
            MEASURING,
        )
    return Check("prefix-cache", "pass", saw, source=MEASURING)


async def prefix_check(net: Net, t: Target, s: DoctorSettings, url: str) -> Check:
    """``prefix-cache``: times prompts sharing more or less of a prefix against one repeated prompt."""
    n = max(2, s.prefix_samples)
    words = max(16, s.prefix_prompt_words)
    fixed_prompt = prompt_words(words, 0)
    shares = [round(0.9 * i / (n - 1), 2) for i in range(n)]
    fixed: list[Timing] = []
    varying: list[Timing] = []
    errors: list[str] = []

    async def one(prompt: list[str], into: list[Timing]) -> None:
        if errors:
            return  # one failure is enough: doctor never waits out a timeout many times
        r = await net.chat(url, t.model, " ".join(prompt), t.key)
        if r.ok and r.ttft is not None:
            into.append(Timing(r.ttft * 1000, r.cached_tokens))
        else:
            errors.append(r.error or tr("no token"))

    await one(fixed_prompt, fixed)  # the cold first request of the fixed prompt
    for i, share in enumerate(shares):
        keep = int(words * share)
        await one(
            [*fixed_prompt[:keep], f"[{i}-{time.time_ns() % 10**9}]", *prompt_words(words - keep, i + 1)], varying
        )
        await one(fixed_prompt, fixed)
    check = assess_prefix_cache(varying, fixed, t.prefix_cache, t.profile)
    if errors and check.status == "skip":
        return Check(
            "prefix-cache",
            "warn",
            clauses([check.saw, tr("failures: {error}").format(error=errors[0])]),
            tr("see the model check"),
            MEASURING,
        )
    return check
