"""``kvswitch advise``: which mode, chunk size, prefix cache and KV dtype suit a workload.

Pure functions: workload facts (:class:`Workload`) and, optionally, a probe result
(:class:`ProbeEvidence`) in, an :class:`Advice` out, with numbered reasons that each cite their
source: the article's scenario advice (S-30…S-32, S-19) and the grounded mode advice of
``reference/engines-and-probing.md`` §7.3. The rules are a score: each fact that favours a mode
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

__all__ = [
    "HIGH_CONCURRENCY",
    "KV_PRESSURE_TOKENS",
    "LONG_PROMPT",
    "LOW_LOAD",
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
    """One numbered reason and where it comes from (``S-30``, ``§7.3``, ``probe``…)."""

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
    label: str = "the probe"

    @property
    def verdict(self) -> Mode | None:
        """``split``/``merged`` when the interval excludes 1, else ``None``."""
        if self.low is None or self.high is None:
            return None
        if self.high < 1:
            return "split"
        if self.low > 1:
            return "merged"
        return None


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
            "mode": self.mode, "chunk_size": self.chunk_size, "prefix_cache": self.prefix_cache,
            "kv_cache_dtype": self.kv_cache_dtype, "decided_by": self.decided_by, "measurement": self.measurement,
            "reasons": [{"n": i, "text": r.text, "source": r.source} for i, r in enumerate(self.reasons, 1)],
            "next_steps": list(self.next_steps), "workload": asdict(self.workload), "scores": dict(self.scores),
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
        cached = (" With high prefix reuse, count only the new (uncached) tokens: those are what a prefill "
                  "instance works on." if w.prefix_reuse == "high" else "")
        votes.append(("split", 2, Reason(
            f"Long prompts ({p} tokens, from {LONG_PROMPT}): the prefill instance is not disturbed by decode, so "
            f"split gives lower TTFT on long prompts (S-31, S-22); split pays off from about 1–2k new prompt "
            f"tokens (§7.3).{cached}", "S-31, §7.3")))
        if high_load:
            votes.append(("split", 1, Reason(
                f"…under load ({c} requests in flight): prefill/decode interference is what split removes (§7.3).",
                "§7.3")))
    elif p is not None and p < SHORT_PROMPT:
        if high_load:
            votes.append(("merged", 2, Reason(
                f"Short prompts ({p} tokens) at high concurrency ({c}): merged keeps everything on one card with "
                "no KV transfer, and its TTFT is steadier on short prompts (S-30, S-22).", "S-30")))
        else:
            votes.append(("merged", 1, Reason(
                f"Short prompts ({p} tokens): merged has no KV transfer and steadier TTFT on short prompts "
                "(S-30, S-22).", "S-30")))
    if w.ttft_slo_ms is not None:
        if low_load:
            notes.append(Reason(
                f"A hard TTFT SLO ({w.ttft_slo_ms:g} ms) favours split (S-31), but at low load ({c} in flight) "
                "split's extra proxy hop and KV transfer usually make TTFT worse, not better (§7.3).", "S-31, §7.3"))
        else:
            votes.append(("split", 1, Reason(
                f"A hard TTFT SLO ({w.ttft_slo_ms:g} ms): split lets prefill be tuned for TTFT on its own (S-31).",
                "S-31")))
    if w.workload in ("coding", "agent"):
        votes.append(("split", 1, Reason(
            f"{_sentence(w.workload)} work (a long system prompt and many turns): split with the "
            "prefix cache on "
            "pays most (S-32).", "S-32")))
    elif w.workload == "chat":
        votes.append(("merged", 1, Reason(
            "Chat: mostly short prompts, many users — merged (S-30).", "S-30")))
    elif w.workload == "batch":
        votes.append(("merged", 1, Reason(
            "Batch work is about throughput: merged (continuous batching with chunked prefill) is the default for "
            "throughput, and split does not raise throughput by itself (§7.3).", "§7.3")))
    if low_load:
        votes.append(("merged", 1, Reason(
            f"Low load ({c} in flight): split adds a proxy hop and a KV transfer to every TTFT, so at low load "
            "TTFT is usually worse with split (§7.3).", "§7.3")))
    return votes, notes


def _chunk(w: Workload, mode: Mode) -> tuple[int | None, Reason]:
    if mode == "split":
        return None, Reason(
            "chunk_size: not set in split mode — it is ignored there (the prefill instance picks its own chunking, "
            f"S-26); keep {DEFAULT_CHUNK} in the profile's merged settings for the way back.", "S-26")
    bits = "never below 256 (every chunk re-reads the weights, S-19) and a multiple of 64 (S-26)"
    p, c = w.prompt_tokens, w.concurrency
    if c is not None and c >= HIGH_CONCURRENCY and (p is None or p < SHORT_PROMPT):
        return DEFAULT_CHUNK, Reason(
            f"chunk_size {DEFAULT_CHUNK}: at high concurrency a smaller chunk keeps decode's inter-token gaps "
            f"smooth (§7.3); 512–1024 is the sweet spot for most 7B models (S-19); {bits}.", "S-19, §7.3")
    if (p is not None and p >= LONG_PROMPT) or w.ttft_slo_ms is not None or w.workload == "batch":
        why = "long prompts" if p is not None and p >= LONG_PROMPT else (
            "a TTFT target" if w.ttft_slo_ms is not None else "throughput")
        return LARGE_CHUNK, Reason(
            f"chunk_size {LARGE_CHUNK} for {why}: a larger chunk gives faster TTFT and throughput, a smaller one "
            f"smoother inter-token latency (§7.3); {LARGE_CHUNK} is still in S-19's 512–1024 sweet spot for 7B "
            f"models; {bits}.", "S-19, §7.3")
    return DEFAULT_CHUNK, Reason(
        f"chunk_size {DEFAULT_CHUNK}: the article's default (S-11) and in the 512–1024 sweet spot for most 7B models "
        f"(S-19); {bits}.", "S-19")


def _prefix(w: Workload) -> tuple[bool, Reason]:
    if w.prefix_reuse == "high" or (w.prefix_reuse is None and w.workload in ("coding", "agent")):
        what = "high prefix reuse" if w.prefix_reuse == "high" else f"{w.workload} work repeats a long system prompt"
        return True, Reason(
            f"Prefix cache on: {what}, and a prefix cache cuts TTFT when prompts share a prefix (S-32, §7.3). It "
            "never speeds decode.", "S-32, §7.3")
    if w.prefix_reuse == "low":
        return False, Reason(
            "Prefix cache off: it only helps prompts that share a prefix (§7.3), and with prompts that all differ "
            "its hit rate makes TTFT swing (S-28).", "§7.3, S-28")
    return True, Reason(
        "Prefix cache on: the article recommends it in both modes (its table), and it helps whenever prompts share "
        "a prefix (§7.3). For mode comparisons fix the prompt or turn it off, or TTFT swings (S-28).",
        "article table, §7.3, S-28")


def _dtype(w: Workload) -> tuple[str, Reason]:
    no_int8 = ("not int8: vLLM and SGLang have no plain int8 KV cache (it is an LMDeploy/TRT-LLM feature; llama.cpp "
               "calls it q8_0) (§7.3, KVS105)")
    if w.prompt_tokens is not None and w.concurrency is not None:
        in_flight = w.prompt_tokens * w.concurrency
        if in_flight >= KV_PRESSURE_TOKENS:
            return "fp8", Reason(
                f"kv_cache_dtype fp8: about {in_flight:,} prompt tokens in flight put pressure on the KV cache; fp8 "
                "roughly doubles KV capacity (vLLM measured 83k → 167k tokens) and halves the bytes split mode "
                f"transfers, but wants calibrated scales for quality; {no_int8}.", "§7.3, §1.3")
    return "auto", Reason(
        f"kv_cache_dtype auto (the model's dtype): switch to fp8 when memory is tight — {no_int8}.", "§7.3, §1.3")


def advise(w: Workload, probe: ProbeEvidence | None = None) -> Advice:
    """The recommendation for ``w``; ``probe`` (a measurement) decides the mode when its
    interval excludes 1."""
    votes, notes = _mode_votes(w)
    scores = {"merged": sum(n for m, n, _ in votes if m == "merged"),
              "split": sum(n for m, n, _ in votes if m == "split")}
    reasons: list[Reason] = [r for _, _, r in votes] + notes
    rules_mode: Mode = "split" if scores["split"] > scores["merged"] else "merged"
    if not votes:
        reasons.append(_no_votes(w))
    elif scores["split"] == scores["merged"]:
        reasons.append(Reason(
            f"The facts weigh the same both ways ({scores['split']}:{scores['merged']}); a tie goes to merged, the "
            "simpler default (§7.3).", "§7.3"))
    mode: Mode = rules_mode
    decided_by: Literal["rules", "measurement"] = "rules"
    measurement: str | None = None
    if probe is not None:
        mode, decided_by, measurement = _apply_probe(probe, rules_mode, reasons)
    one_gpu = w.gpus is not None and w.gpus < 2
    if one_gpu:
        if mode == "split" and decided_by == "rules":
            mode = "merged"
            reasons.append(Reason(
                f"Split would suit this workload ({scores['split']}:{scores['merged']}), but it needs a second "
                f"instance group (≥2 GPUs or nodes) and there is {w.gpus} GPU: with a single instance use merged "
                "(S-25, §7.3).", "S-25, §7.3"))
        elif mode == "split":
            reasons.append(Reason(
                "Split needs a second instance group: with one GPU, prefill and decode share the card and are only "
                "logically split, so memory goes up, not down (S-27); the measured gain needs a second GPU or node "
                "to hold (S-25, §7.3).", "S-25, S-27, §7.3"))
        else:
            reasons.append(Reason(
                "One GPU: merged. Split needs a second instance group (≥2 GPUs or nodes) (S-25, §7.3).",
                "S-25, §7.3"))
    if mode == "split" and not one_gpu:
        if w.gpus is None:
            reasons.append(Reason(
                "Split needs a second instance group — ≥2 GPUs or nodes, one for prefill and one for decode, "
                "ideally with RDMA/NVLink between them; with a single instance use merged (S-25, §7.3).",
                "S-25, §7.3"))
        else:
            reasons.append(Reason(
                f"{w.gpus} GPUs: room for a prefill and a decode instance group; put them on different cards, or "
                "memory goes up instead of down (S-27, §7.3).", "S-27, §7.3"))
        reasons.append(Reason(
            "Split adds a proxy hop and a KV transfer to every TTFT and does not raise throughput by itself: at low "
            "load TTFT is usually worse (§7.3).", "§7.3"))
    chunk, chunk_reason = _chunk(w, mode)
    prefix, prefix_reason = _prefix(w)
    if mode == "split" and w.workload in ("coding", "agent") and not prefix:
        prefix_reason = Reason(prefix_reason.text + " (S-32's split gain for coding assumes a shared prefix.)",
                               prefix_reason.source)
    dtype, dtype_reason = _dtype(w)
    reasons += [chunk_reason, prefix_reason, dtype_reason]
    steps = [
        f"kvswitch switch {mode}, then restart the clients: some cache the provider config until restarted (S-35)",
        "check it: kvswitch probe --max-tokens 128 (small max_tokens so decode does not hide TTFT, S-34; restore "
        "it afterwards)",
    ]
    if mode == "split":
        steps.append("kvswitch doctor --mode split: the split endpoints must be two real instance groups (S-25, S-27)")
    return Advice(mode, chunk, prefix, dtype, reasons, decided_by, measurement, steps, w, scores)


def _sentence(text: str) -> str:
    """``text`` with its first letter upper-cased and the rest as written (vLLM, TTFT, KV stay)."""
    return text[:1].upper() + text[1:]


def _no_votes(w: Workload) -> Reason:
    """Why merged when no fact voted: the defaults §7.3 names, the GPU count as given, and
    the options not given yet."""
    if w.gpus is not None and w.gpus >= 2:
        gpus = (f"{w.gpus} GPUs leave room for split, but nothing else points at it, and merged is "
                "the right default for short prompts, low or medium load, high prefix reuse or "
                "throughput (§7.3)")
    else:
        gpus = ("merged is the right default for 1 GPU, short prompts, low or medium load, high "
                "prefix reuse or throughput (§7.3)")
    given = {"--prompt-tokens": w.prompt_tokens, "--concurrency": w.concurrency, "--gpus": w.gpus,
             "--workload": w.workload}
    missing = [opt for opt, value in given.items() if value is None]
    more = ""
    if missing:
        listed = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + " or " + missing[-1]
        more = f" Give {listed} for a sharper answer."
    return Reason(f"Nothing in the workload points at split, so merged: {gpus}.{more}", "§7.3")


def _apply_probe(p: ProbeEvidence, rules_mode: Mode, reasons: list[Reason]) -> tuple[Mode, Literal["rules", "measurement"], str]:
    failed_split = p.failures.get("split", (0, 0))
    failed_merged = p.failures.get("merged", (0, 0))
    if failed_split[1] and failed_split[0] == failed_split[1] and not (failed_merged[1] and failed_merged[0] == failed_merged[1]):
        text = (f"every split request failed in {p.label} ({failed_split[0]}/{failed_split[1]}), so split does not work "
                "here yet: merged until kvswitch doctor --mode split passes (S-25)")
        reasons.insert(0, Reason("Measured: " + text + ".", "probe, S-25"))
        return "merged", "measurement", text
    if p.ratio is None or p.low is None or p.high is None:
        text = f"{p.label} has no split/merged TTFT comparison (both modes need successful requests): not decided by the measurement"
        reasons.append(Reason(_sentence(text) + "; the rules above decide.", "probe"))
        return rules_mode, "rules", text
    figures = f"TTFT median split/merged {p.ratio:.2f} (95 % interval {p.low:.2f}–{p.high:.2f}) in {p.label}"
    caveat = (" The probe could not verify that the two modes were routed differently (routing unverified), so "
              "check the routing before relying on it." if p.routing_unverified else "")
    verdict = p.verdict
    if verdict is None:
        text = f"{figures}: the interval includes 1, so the mode is not decided by the measurement"
        reasons.append(Reason(f"Measured: {text}; the rules above decide ({rules_mode}).{caveat}", "probe"))
        return rules_mode, "rules", text
    faster = "split is faster to first token" if verdict == "split" else "merged is faster to first token"
    text = f"{figures}: the interval excludes 1, so the measurement decides — {faster} here"
    agree = "" if verdict == rules_mode else f" (the rules alone would say {rules_mode})"
    reasons.insert(0, Reason(f"Measured: {text}{agree}.{caveat}", "probe"))
    return verdict, "measurement", text


# -- probe results ------------------------------------------------------------------------

def evidence_from_report(report: dict[str, Any], label: str | None = None) -> ProbeEvidence:
    """The evidence in one ``kvswitch probe --format json`` report (or history line)."""
    comp = report.get("comparison")
    ratio = lo = hi = None
    r = comp.get("ttft_median_ratio") if isinstance(comp, dict) else None
    if isinstance(r, dict):
        ci = r.get("ci95")
        value = r.get("split/merged")
        if isinstance(value, int | float) and isinstance(ci, list) and len(ci) == 2 and all(
                isinstance(x, int | float) for x in ci):
            ratio, lo, hi = float(value), float(ci[0]), float(ci[1])
    failures = {}
    modes = report.get("modes")
    if isinstance(modes, dict):
        for mode, m in modes.items():
            if isinstance(m, dict) and isinstance(m.get("failures"), int) and isinstance(m.get("requests"), int):
                failures[str(mode)] = (m["failures"], m["requests"])
    raw_notes = report.get("notes")
    notes: list[Any] = raw_notes if isinstance(raw_notes, list) else []
    unverified = any(isinstance(n, str) and n.startswith("routing unverified") for n in notes)
    if label is None:
        when = report.get("time")
        settings = report.get("settings") if isinstance(report.get("settings"), dict) else {}
        where = settings.get("base_url") if isinstance(settings, dict) else None
        label = "the probe" + (f" of {when}" if isinstance(when, str) else "") + (
            f" against {where}" if isinstance(where, str) else "")
    return ProbeEvidence(ratio, lo, hi, failures, unverified, label)


def load_probe(spec: str) -> dict[str, Any]:
    """A probe report: ``latest`` (the newest in ``<history>/probe.jsonl``) or a JSON file written
    by ``kvswitch probe --format json`` (a ``.jsonl`` history file: its last line).
    Raises :class:`~kvswitch.errors.ReadError` when there is none or it cannot be read."""
    from kvswitch.errors import Location, ReadError

    if spec == "latest":
        from kvswitch.probe.report import history_path, load_history

        history = load_history()
        if not history:
            raise ReadError("no probe result in the history yet: run kvswitch probe first", Location(history_path()))
        return _checked(history[-1], history_path())
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReadError(f"cannot read the probe result: {getattr(exc, 'strerror', None) or exc}", Location(path)) from exc
    try:
        data = json.loads(text)
    except ValueError:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            data = json.loads(lines[-1]) if lines else None
        except ValueError:
            data = None
        if data is None:
            raise ReadError("not a kvswitch probe result (JSON from kvswitch probe --format json)", Location(path)) from None
    return _checked(data, path)


def _checked(data: Any, path: Path) -> dict[str, Any]:
    from kvswitch.errors import Location, ReadError

    if not isinstance(data, dict) or not ("comparison" in data or "modes" in data):
        raise ReadError("not a kvswitch probe result (JSON from kvswitch probe --format json)", Location(path))
    return data


def describe(w: Workload) -> str:
    """The workload in a few words, for a heading."""
    parts = []
    if w.prompt_tokens is not None:
        parts.append(f"prompt {w.prompt_tokens} tokens")
    if w.concurrency is not None:
        parts.append(f"concurrency {w.concurrency}")
    if w.gpus is not None:
        parts.append(f"{w.gpus} GPU{'s' if w.gpus != 1 else ''}")
    if w.ttft_slo_ms is not None:
        parts.append(f"TTFT SLO {w.ttft_slo_ms:g} ms")
    if w.prefix_reuse is not None:
        parts.append(f"prefix reuse {w.prefix_reuse}")
    if w.workload is not None:
        parts.append(f"workload {w.workload}")
    return " · ".join(parts) or "no workload facts given"

