"""``kvswitch advise``: which mode, chunk size, prefix cache and KV dtype suit a workload.

Pure functions: workload facts (:class:`Workload`) and, optionally, a probe result
(:class:`ProbeEvidence`) in, an :class:`Advice` out, with numbered reasons in the user's
language (:mod:`kvswitch.i18n`), each with a ``source``: where to read more
(``docs/background.md#ANCHOR``), or ``probe`` for what a measurement said. For maintainers: the
rules come from the source digest's scenario advice (S-30…S-32, S-19) and the grounded mode advice
of ``reference/engines-and-probing.md`` §7.3. The rules are a score: each fact that favours a mode
adds a weight; the higher score wins and a tie goes to merged, the right default (§7.3). With a
probe result whose 95 % interval of the TTFT median ratio (split/merged) excludes 1, the
measurement decides the mode instead, and the advice says so; when the interval includes 1 the
advice says the mode is "not decided by the measurement". Nothing here prints or reads files
but :func:`load_probe`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from kvswitch.i18n import language, ntr, tr

__all__ = [
    "DOCS",
    "HIGH_CONCURRENCY",
    "KV_PRESSURE_TOKENS",
    "LONG_PROMPT",
    "LOW_LOAD",
    "PROBE",
    "SHORT_PROMPT",
    "Advice",
    "ProbeEvidence",
    "Reason",
    "Workload",
    "advise",
    "evidence_from_report",
    "load_probe",
]

LONG_PROMPT = 2000
"""Prompt tokens from which split pays off (§7.3: ≳1–2k new tokens; Dynamo ships prefill remotely
above 1000 new tokens, SGLang's layer pipelining helps from 2048)."""
SHORT_PROMPT = 1000
"""Below this many prompt tokens a prompt is short (S-30, S-22)."""
HIGH_CONCURRENCY = 8
"""Requests in flight from which load is high (S-30; §7.3 "under load")."""
LOW_LOAD = 2
"""Requests in flight up to which load is low: split's extra hop then shows in TTFT (§7.3)."""
KV_PRESSURE_TOKENS = 65_536
"""prompt tokens × concurrency from which fp8 KV is advised: kvswitch's rule of thumb (about 8 GiB of
bf16 KV for a Llama-3.1-8B-class model, §4 arithmetic), not a published threshold."""
DEFAULT_CHUNK = 512
"""The article's default (S-11) and vLLM V0's (§1.1)."""
LARGE_CHUNK = 1024
"""The top of S-19's 512–1024 sweet spot for 7B models."""

DOCS = "docs/background.md"
"""The page that explains the advice; a reason's ``source`` is an anchor in it."""
_STRATEGIES = f"{DOCS}#two-strategies"
_SPLIT = f"{DOCS}#split"
_CHUNK = f"{DOCS}#chunk-size"
_SPLIT_PAYS = f"{DOCS}#when-split-pays"
_MERGED_PAYS = f"{DOCS}#when-merged-pays"
_KNOWN = f"{DOCS}#known-errors"
_ENGINES = f"{DOCS}#real-engines"
_MEASURING = f"{DOCS}#measuring"
PROBE = "probe"
"""The source of a reason a measurement gave."""

WorkloadKind = Literal["chat", "coding", "agent", "batch"]
Mode = Literal["merged", "split"]


@dataclass(frozen=True)
class Workload:
    """What is known about the workload; ``None`` means unknown."""

    prompt_tokens: int | None = None
    concurrency: int | None = None
    gpus: int | None = None
    ttft_slo_ms: float | None = None
    prefix_reuse: Literal["high", "low"] | None = None
    workload: WorkloadKind | None = None


@dataclass(frozen=True)
class Reason:
    """One numbered reason and where to read more: ``docs/background.md#ANCHOR``, or ``probe``."""

    text: str
    source: str


@dataclass(frozen=True)
class ProbeEvidence:
    """What a ``kvswitch probe`` report says about split against merged."""

    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    failures: dict[str, tuple[int, int]] = field(default_factory=dict)  # mode → (failed, requests)
    routing_unverified: bool = False
    label: str = ""  # how the reasons name the measurement ("" → "the probe", translated)

    @property
    def verdict(self) -> Mode | None:
        """``split``/``merged`` when the interval excludes 1, else ``None``."""
        from kvswitch.probe.comparison import faster

        return None if self.low is None or self.high is None else faster(self.low, self.high)


@dataclass(frozen=True)
class Advice:
    """The recommendation; ``chunk_size`` is ``None`` in split mode, where it is ignored (S-26)."""

    mode: Mode
    chunk_size: int | None
    prefix_cache: bool
    kv_cache_dtype: str
    reasons: list[Reason]
    decided_by: Literal["rules", "measurement"]
    measurement: str | None = None
    next_steps: list[str] = field(default_factory=list)
    workload: Workload = field(default_factory=Workload)
    scores: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "chunk_size": self.chunk_size,
            "prefix_cache": self.prefix_cache,
            "kv_cache_dtype": self.kv_cache_dtype,
            "decided_by": self.decided_by,
            "measurement": self.measurement,
            "reasons": [{"n": i, "text": r.text, "source": r.source} for i, r in enumerate(self.reasons, 1)],
            "next_steps": list(self.next_steps),
            "workload": asdict(self.workload),
            "scores": dict(self.scores),
        }


# -- the rules ----------------------------------------------------------------------------


def _mode_votes(w: Workload) -> tuple[list[tuple[Mode, int, Reason]], list[Reason]]:
    """(votes: mode, weight, reason) and notes that weigh nothing, from the workload facts."""
    votes: list[tuple[Mode, int, Reason]] = []
    notes: list[Reason] = []
    p, c = w.prompt_tokens, w.concurrency
    low_load = c is not None and c <= LOW_LOAD
    high_load = c is not None and c >= HIGH_CONCURRENCY
    if p is not None and p >= LONG_PROMPT:
        text = tr(
            "Long prompts ({tokens} tokens, from {threshold}): the prefill instance is not disturbed by "
            "decode, so split gives lower TTFT on long prompts; split pays off from about 1–2k new prompt "
            "tokens."
        ).format(tokens=p, threshold=LONG_PROMPT)
        if w.prefix_reuse == "high":
            text = _then(
                text,
                tr(
                    "With high prefix reuse, count only the new (uncached) tokens: those are what a "
                    "prefill instance works on."
                ),
            )
        votes.append(("split", 2, Reason(text, _SPLIT_PAYS)))
        if high_load:
            votes.append(
                (
                    "split",
                    1,
                    Reason(
                        tr(
                            "…under load ({count} requests in flight): prefill/decode interference is what split "
                            "removes."
                        ).format(count=c),
                        _SPLIT_PAYS,
                    ),
                )
            )
    elif p is not None and p < SHORT_PROMPT:
        if high_load:
            votes.append(
                (
                    "merged",
                    2,
                    Reason(
                        tr(
                            "Short prompts ({tokens} tokens) at high concurrency ({count}): merged keeps everything "
                            "on one card "
                            "with no KV transfer, and its TTFT is steadier on short prompts."
                        ).format(tokens=p, count=c),
                        _MERGED_PAYS,
                    ),
                )
            )
        else:
            votes.append(
                (
                    "merged",
                    1,
                    Reason(
                        tr(
                            "Short prompts ({tokens} tokens): merged has no KV transfer and steadier TTFT on short "
                            "prompts."
                        ).format(tokens=p),
                        _MERGED_PAYS,
                    ),
                )
            )
    if w.ttft_slo_ms is not None:
        slo = f"{w.ttft_slo_ms:g}"
        if low_load:
            notes.append(
                Reason(
                    tr(
                        "A hard TTFT SLO ({ms} ms) favours split, but at low load ({count} in flight) split's extra "
                        "proxy "
                        "hop and KV transfer usually make TTFT worse, not better."
                    ).format(ms=slo, count=c),
                    _SPLIT_PAYS,
                )
            )
        else:
            votes.append(
                (
                    "split",
                    1,
                    Reason(
                        tr("A hard TTFT SLO ({ms} ms): split lets prefill be tuned for TTFT on its own.").format(
                            ms=slo
                        ),
                        _SPLIT_PAYS,
                    ),
                )
            )
    if w.workload in ("coding", "agent"):
        text = (
            tr("Coding work (a long system prompt and many turns): split with the prefix cache on pays most.")
            if w.workload == "coding"
            else tr("Agent work (a long system prompt and many turns): split with the prefix cache on pays most.")
        )
        votes.append(("split", 1, Reason(text, _SPLIT_PAYS)))
    elif w.workload == "chat":
        votes.append(("merged", 1, Reason(tr("Chat: mostly short prompts, many users — merged."), _MERGED_PAYS)))
    elif w.workload == "batch":
        votes.append(
            (
                "merged",
                1,
                Reason(
                    tr(
                        "Batch work is about throughput: merged (continuous batching with chunked prefill) is the "
                        "default for "
                        "throughput, and split does not raise throughput by itself."
                    ),
                    _MERGED_PAYS,
                ),
            )
        )
    if low_load:
        votes.append(
            (
                "merged",
                1,
                Reason(
                    tr(
                        "Low load ({count} in flight): split adds a proxy hop and a KV transfer to every TTFT, so at "
                        "low load "
                        "TTFT is usually worse with split."
                    ).format(count=c),
                    _MERGED_PAYS,
                ),
            )
        )
    return votes, notes


def _then(first: str, second: str) -> str:
    """Two sentences, spaced as the language spaces them."""
    return first + ("" if language() == "zh_CN" else " ") + second


def _chunk(w: Workload, mode: Mode) -> tuple[int | None, Reason]:
    if mode == "split":
        return None, Reason(
            tr(
                "chunk_size: not set in split mode — it is ignored there (the prefill instance picks its own "
                "chunking); keep {chunk} in the profile's merged settings for the way back."
            ).format(chunk=DEFAULT_CHUNK),
            _CHUNK,
        )
    bits = tr("never below 256 (every chunk re-reads the weights) and a multiple of 64")
    p, c = w.prompt_tokens, w.concurrency
    if c is not None and c >= HIGH_CONCURRENCY and (p is None or p < SHORT_PROMPT):
        return DEFAULT_CHUNK, Reason(
            tr(
                "chunk_size {chunk}: at high concurrency a smaller chunk keeps decode's inter-token gaps smooth; "
                "512–1024 is the sweet spot for most 7B models; {limits}."
            ).format(chunk=DEFAULT_CHUNK, limits=bits),
            _CHUNK,
        )
    if (p is not None and p >= LONG_PROMPT) or w.ttft_slo_ms is not None or w.workload == "batch":
        if p is not None and p >= LONG_PROMPT:
            text = tr(
                "chunk_size {chunk} for long prompts: a larger chunk gives faster TTFT and throughput, a "
                "smaller one smoother inter-token latency; {chunk} is still in the 512–1024 sweet spot for 7B "
                "models; {limits}."
            )
        elif w.ttft_slo_ms is not None:
            text = tr(
                "chunk_size {chunk} for a TTFT target: a larger chunk gives faster TTFT and throughput, a "
                "smaller one smoother inter-token latency; {chunk} is still in the 512–1024 sweet spot for 7B "
                "models; {limits}."
            )
        else:
            text = tr(
                "chunk_size {chunk} for throughput: a larger chunk gives faster TTFT and throughput, a "
                "smaller one smoother inter-token latency; {chunk} is still in the 512–1024 sweet spot for 7B "
                "models; {limits}."
            )
        return LARGE_CHUNK, Reason(text.format(chunk=LARGE_CHUNK, limits=bits), _CHUNK)
    return DEFAULT_CHUNK, Reason(
        tr(
            "chunk_size {chunk}: kvswitch's default, and in the 512–1024 sweet spot for most 7B models; {limits}."
        ).format(chunk=DEFAULT_CHUNK, limits=bits),
        _CHUNK,
    )


def _prefix(w: Workload) -> tuple[bool, Reason]:
    if w.prefix_reuse == "high" or (w.prefix_reuse is None and w.workload in ("coding", "agent")):
        if w.prefix_reuse == "high":
            what = tr("high prefix reuse")
        elif w.workload == "coding":
            what = tr("coding work repeats a long system prompt")
        else:
            what = tr("agent work repeats a long system prompt")
        return True, Reason(
            tr(
                "Prefix cache on: {why}, and a prefix cache cuts TTFT when prompts share a prefix. It never speeds "
                "decode."
            ).format(why=what),
            _SPLIT_PAYS,
        )
    if w.prefix_reuse == "low":
        return False, Reason(
            tr(
                "Prefix cache off: it only helps prompts that share a prefix, and with prompts that all differ its hit "
                "rate makes TTFT swing."
            ),
            _MEASURING,
        )
    return True, Reason(
        tr(
            "Prefix cache on: recommended in both modes, and it helps whenever prompts share a prefix. For mode "
            "comparisons fix the prompt or turn it off, or TTFT swings."
        ),
        _STRATEGIES,
    )


def _dtype(w: Workload) -> tuple[str, Reason]:
    no_int8 = tr(
        "not int8: vLLM and SGLang have no plain int8 KV cache (it is an LMDeploy/TRT-LLM feature; "
        "llama.cpp calls it q8_0) (KVS105)"
    )
    if w.prompt_tokens is not None and w.concurrency is not None:
        in_flight = w.prompt_tokens * w.concurrency
        if in_flight >= KV_PRESSURE_TOKENS:
            return "fp8", Reason(
                tr(
                    "kv_cache_dtype fp8: about {tokens} prompt tokens in flight put pressure on the KV cache; fp8 "
                    "roughly doubles KV capacity (vLLM measured 83k → 167k tokens) and halves the bytes split mode "
                    "transfers, but wants calibrated scales for quality; {int8}."
                ).format(tokens=f"{in_flight:,}", int8=no_int8),
                _ENGINES,
            )
    return "auto", Reason(
        tr("kv_cache_dtype auto (the model's dtype): switch to fp8 when memory is tight — {int8}.").format(
            int8=no_int8
        ),
        _ENGINES,
    )


def advise(w: Workload, probe: ProbeEvidence | None = None) -> Advice:
    """The recommendation for ``w``; ``probe`` (a measurement) decides the mode when its
    interval excludes 1."""
    votes, notes = _mode_votes(w)
    scores = {
        "merged": sum(n for m, n, _ in votes if m == "merged"),
        "split": sum(n for m, n, _ in votes if m == "split"),
    }
    tally = f"{scores['split']}:{scores['merged']}"
    reasons: list[Reason] = [r for _, _, r in votes] + notes
    rules_mode: Mode = "split" if scores["split"] > scores["merged"] else "merged"
    if not votes:
        reasons.append(_no_votes(w))
    elif scores["split"] == scores["merged"]:
        reasons.append(
            Reason(
                tr("The facts weigh the same both ways ({tally}); a tie goes to merged, the simpler default.").format(
                    tally=tally
                ),
                _MERGED_PAYS,
            )
        )
    mode: Mode = rules_mode
    decided_by: Literal["rules", "measurement"] = "rules"
    measurement: str | None = None
    if probe is not None:
        mode, decided_by, measurement = _apply_probe(probe, rules_mode, reasons)
    one_gpu = w.gpus is not None and w.gpus < 2
    if one_gpu:
        if mode == "split" and decided_by == "rules":
            mode = "merged"
            reasons.append(
                Reason(
                    tr(
                        "Split would suit this workload ({tally}), but it needs a second instance group (≥2 GPUs or "
                        "nodes) "
                        "and there is {gpus} GPU: with a single instance use merged."
                    ).format(tally=tally, gpus=w.gpus),
                    _SPLIT,
                )
            )
        elif mode == "split":
            reasons.append(
                Reason(
                    tr(
                        "Split needs a second instance group: with one GPU, prefill and decode share the card and are "
                        "only "
                        "logically split, so memory goes up, not down; the measured gain needs a second GPU or node to "
                        "hold."
                    ),
                    _KNOWN,
                )
            )
        else:
            reasons.append(
                Reason(tr("One GPU: merged. Split needs a second instance group (≥2 GPUs or nodes)."), _SPLIT)
            )
    if mode == "split" and not one_gpu:
        if w.gpus is None:
            reasons.append(
                Reason(
                    tr(
                        "Split needs a second instance group — ≥2 GPUs or nodes, one for prefill and one for decode, "
                        "ideally with RDMA/NVLink between them; with a single instance use merged."
                    ),
                    _SPLIT,
                )
            )
        else:
            reasons.append(
                Reason(
                    tr(
                        "{gpus} GPUs: room for a prefill and a decode instance group; put them on different cards, or "
                        "memory goes up instead of down."
                    ).format(gpus=w.gpus),
                    _KNOWN,
                )
            )
        reasons.append(
            Reason(
                tr(
                    "Split adds a proxy hop and a KV transfer to every TTFT and does not raise throughput by itself: "
                    "at low "
                    "load TTFT is usually worse."
                ),
                _MERGED_PAYS,
            )
        )
    chunk, chunk_reason = _chunk(w, mode)
    prefix, prefix_reason = _prefix(w)
    if mode == "split" and w.workload in ("coding", "agent") and not prefix:
        prefix_reason = Reason(
            _then(prefix_reason.text, tr("(Split's gain for coding assumes a shared prefix.)")), prefix_reason.source
        )
    dtype, dtype_reason = _dtype(w)
    reasons += [chunk_reason, prefix_reason, dtype_reason]
    steps = [
        tr("kvswitch switch {mode}, then restart the clients: some cache the provider config until restarted").format(
            mode=mode
        ),
        tr(
            "check it: kvswitch probe --max-tokens 128 (a small max_tokens, so decode does not hide TTFT; restore it "
            "afterwards)"
        ),
    ]
    if mode == "split":
        steps.append(tr("kvswitch doctor --mode split: the split endpoints must be two real instance groups"))
    return Advice(mode, chunk, prefix, dtype, reasons, decided_by, measurement, steps, w, scores)


def _sentence(text: str) -> str:
    """``text`` with its first letter upper-cased and the rest as written (vLLM, TTFT, KV stay)."""
    return text[:1].upper() + text[1:]


def _no_votes(w: Workload) -> Reason:
    """Why merged when no fact voted: the defaults the grounded advice names (§7.3), the GPU
    count as given, and the options not given yet."""
    if w.gpus is not None and w.gpus >= 2:
        text = tr(
            "Nothing in the workload points at split, so merged: {gpus} GPUs leave room for split, but "
            "nothing else points at it, and merged is the right default for short prompts, low or medium "
            "load, high prefix reuse or throughput."
        ).format(gpus=w.gpus)
    else:
        text = tr(
            "Nothing in the workload points at split, so merged: merged is the right default for 1 GPU, "
            "short prompts, low or medium load, high prefix reuse or throughput."
        )
    given = {
        "--prompt-tokens": w.prompt_tokens,
        "--concurrency": w.concurrency,
        "--gpus": w.gpus,
        "--workload": w.workload,
    }
    missing = [opt for opt, value in given.items() if value is None]
    if missing:
        listed = (
            missing[0]
            if len(missing) == 1
            else tr("{options} or {last}").format(options=", ".join(missing[:-1]), last=missing[-1])
        )
        text = _then(text, tr("Give {options} for a sharper answer.").format(options=listed))
    return Reason(text, _MERGED_PAYS)


def _label(p: ProbeEvidence) -> str:
    return p.label or tr("the probe")


def _apply_probe(
    p: ProbeEvidence, rules_mode: Mode, reasons: list[Reason]
) -> tuple[Mode, Literal["rules", "measurement"], str]:
    failed_split = p.failures.get("split", (0, 0))
    failed_merged = p.failures.get("merged", (0, 0))
    label = _label(p)
    if (
        failed_split[1]
        and failed_split[0] == failed_split[1]
        and not (failed_merged[1] and failed_merged[0] == failed_merged[1])
    ):
        text = tr(
            "every split request failed in {label} ({failed}/{requests}), so split does not work here yet: "
            "merged until kvswitch doctor --mode split passes"
        ).format(label=label, failed=failed_split[0], requests=failed_split[1])
        reasons.insert(0, Reason(tr("Measured: {text}.").format(text=text), PROBE))
        return "merged", "measurement", text
    if p.ratio is None or p.low is None or p.high is None:
        text = _sentence(
            tr(
                "{label} has no split/merged TTFT comparison (both modes need successful requests): not "
                "decided by the measurement"
            ).format(label=label)
        )
        reasons.append(Reason(tr("{text}; the rules above decide.").format(text=text), PROBE))
        return rules_mode, "rules", text
    figures = tr("TTFT median split/merged {ratio} (95 % interval {low}–{high}) in {label}").format(
        ratio=f"{p.ratio:.2f}", low=f"{p.low:.2f}", high=f"{p.high:.2f}", label=label
    )
    caveat = (
        tr(
            "The probe could not verify that the two modes were routed differently (routing unverified), so "
            "check the routing before relying on it."
        )
        if p.routing_unverified
        else ""
    )
    verdict = p.verdict
    if verdict is None:
        text = tr("{figures}: the interval includes 1, so the mode is not decided by the measurement").format(
            figures=figures
        )
        reason = tr("Measured: {text}; the rules above decide ({mode}).").format(text=text, mode=rules_mode)
        reasons.append(Reason(_then(reason, caveat) if caveat else reason, PROBE))
        return rules_mode, "rules", text
    text = (
        tr("{figures}: the interval excludes 1, so the measurement decides — split is faster to first token here")
        if verdict == "split"
        else tr("{figures}: the interval excludes 1, so the measurement decides — merged is faster to first token here")
    ).format(figures=figures)
    reason = (
        tr("Measured: {text}.").format(text=text)
        if verdict == rules_mode
        else tr("Measured: {text} (the rules alone would say {mode}).").format(text=text, mode=rules_mode)
    )
    reasons.insert(0, Reason(_then(reason, caveat) if caveat else reason, PROBE))
    return verdict, "measurement", text


# -- probe results ------------------------------------------------------------------------


def evidence_from_report(report: dict[str, Any], label: str | None = None) -> ProbeEvidence:
    """The evidence in one ``kvswitch probe --format json`` report (or history line)."""
    from kvswitch.probe.comparison import ttft_verdict

    read = ttft_verdict(report)
    ratio, lo, hi = (read.ratio, read.low, read.high) if read is not None else (None, None, None)
    failures = {}
    modes = report.get("modes")
    if isinstance(modes, dict):
        for mode, m in modes.items():
            if isinstance(m, dict) and isinstance(m.get("failures"), int) and isinstance(m.get("requests"), int):
                failures[str(mode)] = (m["failures"], m["requests"])
    raw_notes = report.get("notes")
    notes: list[Any] = raw_notes if isinstance(raw_notes, list) else []
    verified = report.get("routing_verified")  # a field since probe reports version 2
    unverified = (
        verified is False
        if isinstance(verified, bool)
        else any(isinstance(n, str) and n.startswith("routing unverified") for n in notes)
    )  # older reports
    if label is None:
        when = report.get("time")
        settings = report.get("settings") if isinstance(report.get("settings"), dict) else {}
        where = settings.get("base_url") if isinstance(settings, dict) else None
        if isinstance(when, str) and isinstance(where, str):
            label = tr("the probe of {time} against {url}").format(time=when, url=where)
        elif isinstance(when, str):
            label = tr("the probe of {time}").format(time=when)
        elif isinstance(where, str):
            label = tr("the probe against {url}").format(url=where)
        else:
            label = tr("the probe")
    return ProbeEvidence(ratio, lo, hi, failures, unverified, label)


def _not_probe() -> str:
    return tr("not a kvswitch probe result (JSON from kvswitch probe --format json)")


def load_probe(spec: str) -> dict[str, Any]:
    """A probe report: ``latest`` (the newest in ``<history>/probe.jsonl``) or a JSON file written
    by ``kvswitch probe --format json`` (the envelope or a bare report; a ``.jsonl`` history file:
    its last line).
    Raises :class:`~kvswitch.errors.ReadError` when there is none or it cannot be read."""
    from kvswitch.errors import Location, ReadError

    if spec == "latest":
        from kvswitch.probe.report import history_path, load_history

        history = load_history()
        if not history:
            raise ReadError(
                tr("no probe result in the history yet: run kvswitch probe first"), Location(history_path())
            )
        return _checked(history[-1], history_path())
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReadError(
            tr("cannot read the probe result: {reason}").format(reason=getattr(exc, "strerror", None) or exc),
            Location(path),
        ) from exc
    try:
        data = json.loads(text)
    except ValueError:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            data = json.loads(lines[-1]) if lines else None
        except ValueError:
            data = None
        if data is None:
            raise ReadError(_not_probe(), Location(path)) from None
    return _checked(data, path)


def _checked(data: Any, path: Path) -> dict[str, Any]:
    from kvswitch.errors import Location, ReadError

    if isinstance(data, dict) and data.get("command") == "probe" and isinstance(data.get("data"), dict):
        data = data["data"]  # kvswitch probe --format json: the report in the JSON envelope
    if not isinstance(data, dict) or not ("comparison" in data or "modes" in data):
        raise ReadError(_not_probe(), Location(path))
    return data


def describe(w: Workload) -> str:
    """The workload in a few words, for a heading."""
    parts = []
    if w.prompt_tokens is not None:
        parts.append(tr("prompt {tokens} tokens").format(tokens=w.prompt_tokens))
    if w.concurrency is not None:
        parts.append(tr("concurrency {count}").format(count=w.concurrency))
    if w.gpus is not None:
        parts.append(ntr("{count} GPU", "{count} GPUs", w.gpus).format(count=w.gpus))
    if w.ttft_slo_ms is not None:
        parts.append(tr("TTFT SLO {ms} ms").format(ms=f"{w.ttft_slo_ms:g}"))
    if w.prefix_reuse is not None:
        parts.append(tr("prefix reuse {level}").format(level=w.prefix_reuse))
    if w.workload is not None:
        parts.append(tr("workload {kind}").format(kind=w.workload))
    return " · ".join(parts) or tr("no workload facts given")
