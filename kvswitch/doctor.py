"""``kvswitch doctor``: the known errors of a merged/split setup, as live checks.

Every check returns data, a :class:`Check` (name, pass|warn|fail|skip, what it saw, the fix and
where to read more); nothing here prints. Texts are in the user's language
(:mod:`kvswitch.i18n`); check names and statuses are not translated. The checks, in order
(the S-nn tags name the source digest's facts, for maintainers):

- ``config``: kvswitch lint of ``kvswitch.toml`` and every registered client (errors → fail).
- ``key-variables``: the environment variables registered clients read the active profile's
  key from (Codex, OpenCode) are set here, to that key; else → warn with the export line (the
  key masked).
- ``chunk-size``: chunk_size changed in split mode, where it is ignored (KVS103), or not a
  multiple of 64 (KVS101) → warn (S-26).
- ``reachable``: an HTTP GET of the base URL (the profile's merged URL); refused or no
  answer → fail. It says when the request went through a proxy.
- ``url-convention``: which of ``<base>/v1/models`` and ``<base>/models`` answers, against the
  profile's ``url_convention`` (D-12).
- ``auth``: the requests with the key; 401/403 → fail with the S-24 hints (whitespace or a line
  break in the resolved key, a trailing ``/`` on the base URL, which clients join into ``//``)
  and S-29 (the key's status and quota). Paths are joined the way clients join them, without
  normalising, so the trailing-slash case is reproduced, not hidden.
- ``model``: the model is in ``GET …/models`` and a one-token chat request finds it (S-08).
- ``split``: in split mode, the prefill and decode endpoints are reachable and distinct, and a
  split request to the profile's split URL (with ``X-Cache-Mode: split`` where both modes share
  one URL and the profile sends the header) does not stall (S-25).
- ``nvidia-smi``: nvidia-smi runs (locally, or through each instance's command prefix).
- ``same-gpu``: prefill and decode report different GPU UUIDs (S-27).
- ``prefix-cache``: TTFT of prompts that share more or less of a prefix against one repeated
  prompt; big swings with the prefix cache on → warn (S-28).

Keys (D-7, D-12): a key goes only to the hosts the profile names (its base URL, each mode's URL
and the split endpoints), or to the ``--base-url`` given together with ``--api-key-env``; never
to an address found in a client file, and redirects are not followed (one rule for probe and
doctor: :mod:`kvswitch.key_scope`). No key is in any check's text, in any form a server may echo it
(:mod:`kvswitch.redact`). Every request has a short timeout and a whole-answer deadline, and
every answer a size cap, so doctor never hangs and no server can exhaust its memory. Requests go
through :func:`kvswitch.network.async_client`, the probe's transport: the same proxies and the
same trusted certificates as ``kvswitch probe``.
"""

from __future__ import annotations

import difflib
import re
import shutil
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from kvswitch.addresses import is_loopback_url
from kvswitch.i18n import language, ntr, tr
from kvswitch.key_scope import KeyScope, key_for
from kvswitch.key_scope import origin as _origin
from kvswitch.kinds.base import MODE_HEADER

if TYPE_CHECKING:
    from kvswitch.config import Config
    from kvswitch.linter import LintResult
    from kvswitch.probe.client import RequestResult

__all__ = [
    "CHECKS",
    "DOCS",
    "Check",
    "CheckStatus",
    "DoctorReport",
    "DoctorSettings",
    "Target",
    "Timing",
    "assess_prefix_cache",
    "run_doctor",
]

CheckStatus = Literal["pass", "warn", "fail", "skip"]

CHECKS = (
    "config",
    "key-variables",
    "chunk-size",
    "reachable",
    "url-convention",
    "auth",
    "model",
    "split",
    "nvidia-smi",
    "same-gpu",
    "prefix-cache",
)
"""Every check's name, in the order doctor runs them (``--skip`` takes these)."""

DOCS = "docs/background.md"
"""The page that explains what the checks look for; a check's ``source`` is an anchor in it."""
_KNOWN = f"{DOCS}#known-errors"
_CHUNK = f"{DOCS}#chunk-size"
_MEASURING = f"{DOCS}#measuring"

SWING = 0.5
"""TTFT spread ((max − min) / median) above which TTFT is said to swing (S-28)..."""
SWING_MIN_MS = 30.0
"""...provided max − min is at least this many milliseconds (below it, a swing is noise)."""


def _split_fix() -> str:
    return tr(
        "split needs two real instance groups; with one instance use merged: kvswitch switch merged. "
        "Two instance groups: a prefill and a decode deployment on their own GPUs, with a router in front"
    )


def _prefix_fix() -> str:
    return tr(
        "fix the prompt or turn the prefix cache off for comparisons: kvswitch probe sends one prompt with "
        "--no-cache-bust (or a unique one per request by default); turning the cache off takes "
        "kvswitch profile edit {profile} --prefix-cache false and the server's own flag "
        "(vLLM --no-enable-prefix-caching, SGLang --disable-radix-cache)"
    )


def _not_sent() -> str:
    return tr("not sent: the HTTP library refuses a header value (the key) with whitespace or a line break")


def _join(parts: Sequence[str]) -> str:
    """Clauses joined with a semicolon: full-width in Chinese."""
    return ("；" if language() == "zh_CN" else "; ").join(parts)


def _paren(text: str) -> str:
    """``text`` in parentheses: full-width in Chinese."""
    return f"（{text}）" if language() == "zh_CN" else f" ({text})"


@dataclass(frozen=True, slots=True)
class Check:
    """One check's outcome: what it looked at and saw, the fix when it is not a pass, and where
    to read more (``source``: a page and anchor, or empty)."""

    name: str
    status: CheckStatus
    saw: str
    fix: str = ""
    source: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "saw": self.saw, "fix": self.fix, "source": self.source}


@dataclass(frozen=True)
class DoctorSettings:
    """What to check. ``base_url`` (with ``model`` and maybe ``api_key_env``) checks that
    address instead of a profile; ``mode`` overrides the configured mode."""

    profile: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    mode: Literal["merged", "split"] | None = None
    smi: str = "nvidia-smi"
    prefill_prefix: Sequence[str] = ()
    decode_prefix: Sequence[str] = ()
    timeout: float = 4.0
    prefix_samples: int = 3
    prefix_prompt_words: int = 400
    gpu_seconds: float = 2.0
    skip: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Target:
    """The server doctor talks to, and the only addresses that may receive the key."""

    label: str
    profile: str | None
    base_url: str
    model: str
    mode: str
    url_convention: str | None = None
    prefill: str | None = None
    decode: str | None = None
    split_url: str | None = None  # where a split request goes (the profile's split URL)
    split_header: bool = True  # a split request says X-Cache-Mode: split (one URL for both modes)
    prefix_cache: bool | None = None
    key: str | None = field(default=None, repr=False)
    key_note: str | None = None  # why there is no key (not set, keyring error…)
    key_ref: str | None = None  # where the key comes from: keyring, env:NAME
    allowed: frozenset[tuple[str, str, int]] = frozenset()

    def as_dict(self) -> dict[str, Any]:
        from kvswitch.redact import mask

        return {
            "label": self.label,
            "profile": self.profile,
            "base_url": _show_url(self.base_url),
            "model": self.model,
            "mode": self.mode,
            "url_convention": self.url_convention,
            "prefill": _show_url(self.prefill) if self.prefill else None,
            "decode": _show_url(self.decode) if self.decode else None,
            "key": mask(self.key) if self.key else None,
        }


@dataclass
class DoctorReport:
    """Every check, in order, and what was checked."""

    checks: list[Check]
    target: Target | None = None

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def exit_code(self) -> int:
        """1 when any check failed, else 0."""
        return 1 if self.failed else 0

    def get(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def counts(self) -> dict[str, int]:
        """How many checks passed, warned, failed and were skipped."""
        return {status: sum(c.status == status for c in self.checks) for status in ("pass", "warn", "fail", "skip")}

    def as_dict(self) -> dict[str, Any]:
        """The report as ``kvswitch doctor --format json`` puts it in the envelope's ``data``."""
        return {
            "target": self.target.as_dict() if self.target else None,
            "checks": [c.as_dict() for c in self.checks],
            "counts": self.counts(),
        }


# -- URLs ---------------------------------------------------------------------------------


def _show_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may hold credentials)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.split(r"[?#@]", url, maxsplit=1)[0] + "…"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    shown = f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else f"{netloc}{parts.path}"
    return shown + ("?…" if parts.query else "") + ("#…" if parts.fragment else "")


def guess_convention(base_url: str) -> str:
    """``includes-v1`` for a base that ends in ``/v1``, else ``append-v1``."""
    return "includes-v1" if base_url.rstrip("/").endswith("/v1") else "append-v1"


def _paths(convention: str) -> tuple[str, str]:
    """(models path, chat path) appended to the base URL under ``convention``."""
    if convention == "includes-v1":
        return "/models", "/chat/completions"
    return "/v1/models", "/v1/chat/completions"


def _same_address(a: str, b: str) -> bool:
    oa, ob = _origin(a), _origin(b)
    return oa is not None and oa == ob and urlsplit(a).path.rstrip("/") == urlsplit(b).path.rstrip("/")


def _key_problem(key: str | None) -> bool:
    """Whether the resolved key has whitespace or a line break anywhere (S-24)."""
    return key is not None and any(c.isspace() for c in key)


def _clean_key(key: str) -> str:
    return re.sub(r"\s+", "", key)


# -- the target ---------------------------------------------------------------------------


def _target_from_settings(s: DoctorSettings, config: Config | None) -> tuple[Target | None, Check | None]:
    """The target, or a check that says why there is none."""
    from kvswitch.errors import KvswitchError
    from kvswitch.validate import show_name

    key: str | None = None
    note: str | None = None
    if s.base_url:
        from kvswitch.keys import env_key

        try:
            key = env_key(s.api_key_env) if s.api_key_env else None
            if s.api_key_env and not key:
                note = tr("${name} is not set").format(name=s.api_key_env)
            elif not s.api_key_env:
                note = tr("--api-key-env not given, and a profile's key never goes to another address")
        except KvswitchError as exc:  # a key that would break the request header
            key, note = None, str(exc)
        origin = _origin(s.base_url)
        return Target(
            label="--base-url",
            profile=None,
            base_url=s.base_url,
            model=s.model or "",
            mode=s.mode or "merged",
            prefill=s.base_url,
            decode=s.base_url,
            key=key or None,
            key_note=note,
            key_ref=f"env:{s.api_key_env}" if s.api_key_env else None,
            allowed=frozenset({origin}) if origin and key else frozenset(),
        ), None
    if config is None:
        return None, None
    try:
        name, profile = config.profile(s.profile)
    except KvswitchError as exc:
        return None, Check(
            "config", "fail", str(exc), tr("choose a profile: kvswitch profile list; kvswitch profile use NAME")
        )
    try:
        from kvswitch.keys import resolve_key

        key = resolve_key(name, profile.key)
        if key is None:
            if profile.key == "keyring":
                note = tr("no key stored for profile {profile} (kvswitch key set {name})").format(
                    profile=show_name(name), name=name
                )
            elif profile.key == "none":
                note = tr('profile {profile} sends no key (key = "none")').format(profile=show_name(name))
            else:
                note = tr("{variable} is not set (the profile's key is {reference})").format(
                    variable=profile.key.removeprefix("env:"), reference=profile.key
                )
    except KvswitchError as exc:
        note = str(exc)
    prefill = profile.split.prefill_base_url or profile.base_url
    decode = profile.split.decode_base_url or profile.base_url
    merged_url, split_url = profile.mode_url("merged"), profile.mode_url("split")
    urls = (profile.base_url, prefill, decode, merged_url, split_url)
    allowed = KeyScope.of(key, urls).origins
    return Target(
        label=tr("profile {name}").format(name=show_name(name)),
        profile=name,
        base_url=merged_url,
        model=profile.model,
        mode=s.mode or config.model.mode,
        url_convention=profile.url_convention,
        prefill=prefill,
        decode=decode,
        split_url=split_url,
        split_header=profile.mode_header and split_url == merged_url,
        prefix_cache=profile.cache.prefix_cache,
        key=key,
        key_note=note,
        key_ref=profile.key,
        allowed=allowed,
    ), None


# -- local checks: lint -------------------------------------------------------------------


def _lint_all(s: DoctorSettings) -> tuple[Config | None, list[LintResult], list[str], Check | None]:
    """(config, lint results, files that could not be read, a config failure) — no network."""
    from kvswitch.config import client_path, config_file, read_config
    from kvswitch.errors import KvswitchError
    from kvswitch.kinds import CONFIG
    from kvswitch.linter import lint

    path = config_file()
    if not path.exists():
        if s.base_url:
            return (
                None,
                [],
                [],
                Check("config", "skip", tr("no kvswitch config at {path}; checking --base-url only").format(path=path)),
            )
        return (
            None,
            [],
            [],
            Check(
                "config",
                "fail",
                tr("kvswitch is not set up yet: no {path}").format(path=path),
                tr("run kvswitch init (or check an address with --base-url URL --model M)"),
            ),
        )
    results: list[LintResult] = []
    unreadable: list[str] = []
    try:
        results.append(lint(path, CONFIG))
    except KvswitchError as exc:
        return (
            None,
            [],
            [],
            Check(
                "config",
                "fail",
                tr("cannot read {path}: {reason}").format(path=path, reason=exc),
                tr("fix the file's permissions"),
            ),
        )
    try:
        config = read_config(path)
    except KvswitchError:
        return None, results, [], None  # the lint findings say why
    for entry in config.model.clients:
        cpath = client_path(entry)
        try:
            results.append(lint(cpath, entry.kind))
        except KvswitchError as exc:
            unreadable.append(f"{cpath}: {exc.message}")
    return config, results, unreadable, None


_CHUNK_CODES = ("KVS101", "KVS103")


def _is_chunk_finding(d: Any) -> bool:
    return d.code in _CHUNK_CODES and bool(d.key_path) and "chunk" in str(d.key_path[-1]).lower()


def _config_check(results: list[LintResult], unreadable: list[str]) -> Check:
    diags = [d for r in results for d in r.diagnostics]
    errors = [d for d in diags if str(d.severity) == "error"]
    warnings = [d for d in diags if str(d.severity) == "warning" and not _is_chunk_finding(d)]
    files = len(results)
    what = (
        ntr("kvswitch.toml and {count} client", "kvswitch.toml and {count} clients", files - 1).format(count=files - 1)
        if files
        else tr("no files were linted")
    )
    if errors or unreadable:
        shown = [f"{d.location}: {d.code} {d.message}" for d in errors[:3]] + unreadable[:3]
        more = len(errors) + len(unreadable) - len(shown)
        fix = tr(
            "kvswitch lint --fix PATH applies the fixable ones (KVS101, KVS201, KVS210); the codes are "
            "explained in docs/diagnostics.md"
        )
        if unreadable:
            fix = _join([fix, tr("a registered client that is gone: kvswitch client remove PATH")])
        count = len(errors) + len(unreadable)
        saw = ntr("{count} error in {what}: {found}", "{count} errors in {what}: {found}", count).format(
            count=count, what=what, found=_join(shown)
        )
        if more > 0:
            saw += _paren(tr("and {count} more").format(count=more))
        return Check("config", "fail", saw, fix)
    if warnings:
        shown = [f"{d.location}: {d.code} {d.message}" for d in warnings[:3]]
        return Check(
            "config",
            "warn",
            ntr("{count} warning in {what}: {found}", "{count} warnings in {what}: {found}", len(warnings)).format(
                count=len(warnings), what=what, found=_join(shown)
            ),
            tr("see kvswitch lint PATH (and --fix for the fixable ones)"),
        )
    return Check("config", "pass", tr("{what}: no errors or warnings").format(what=what))


def _key_variables_check(config: Config | None) -> Check:
    """Whether the variables registered clients read the active profile's key from are set
    here, to that key (D-7 keys for real clients: Codex, OpenCode)."""
    from kvswitch.errors import KvswitchError
    from kvswitch.key_variables import key_variables

    if config is None:
        return Check("key-variables", "skip", tr("no kvswitch config"))
    try:
        found = key_variables(config)
    except KvswitchError as exc:
        return Check(
            "key-variables",
            "warn",
            tr("cannot read the key to compare: {reason}").format(reason=exc),
            tr("check the keyring: kvswitch key get PROFILE"),
        )
    if not found:
        return Check("key-variables", "skip", tr("no registered client reads its key from an environment variable"))
    said = [v.describe() for v in found]
    saw = _join([text for text, _ in said])
    if all(v.ok for v in found):
        return Check("key-variables", "pass", saw)
    return Check("key-variables", "warn", saw, _join([fix for _, fix in said if fix]))


def _chunk_check(results: list[LintResult], mode: str) -> Check:
    found = [d for r in results for d in r.diagnostics if _is_chunk_finding(d)]
    if not results:
        return Check("chunk-size", "skip", tr("no files were linted"), source=_CHUNK)
    ignored = [d for d in found if d.code == "KVS103"]
    rounding = [d for d in found if d.code == "KVS101"]
    if not found:
        return Check(
            "chunk-size",
            "pass",
            tr(
                "no chunk_size is set where it is ignored (mode {mode}), and every chunk_size is a multiple of 64"
            ).format(mode=mode),
            source=_CHUNK,
        )
    saw = [f"{d.location}: {d.message}" for d in (ignored + rounding)[:3]]
    fixes = []
    if ignored:
        fixes.append(
            tr(
                "chunk_size only takes effect in merged mode: switch to merged (kvswitch switch merged) to "
                "use it, or tune the prefill instance's own chunking (vLLM --max-num-batched-tokens / "
                "--long-prefill-token-threshold, SGLang --chunked-prefill-size)"
            )
        )
    if rounding:
        fixes.append(
            tr(
                "use a multiple of 64 (kvswitch lint --fix rounds it, 500 → 512): some endpoints require it "
                "and round silently"
            )
        )
    return Check("chunk-size", "warn", _join(saw), _join(fixes), _CHUNK)


# -- network ------------------------------------------------------------------------------


@dataclass
class _Answer:
    status: int | None = None
    data: Any = None
    error: str | None = None
    refused: bool = False  # the HTTP library would not send it (a header value with whitespace)
    ms: float = 0.0

    @property
    def models(self) -> list[str] | None:
        """The model ids of a ``GET …/models`` answer, or ``None``."""
        if self.status != 200 or not isinstance(self.data, dict) or not isinstance(self.data.get("data"), list):
            return None
        return [str(m["id"]) for m in self.data["data"] if isinstance(m, dict) and "id" in m]

    def describe(self) -> str:
        if self.refused:
            return _not_sent()
        if self.error:
            return self.error
        message = ""
        if isinstance(self.data, dict):
            err = self.data.get("error", self.data.get("detail"))
            if isinstance(err, dict):
                err = err.get("message")
            if isinstance(err, str):
                message = f" ({err[:160]})"
        return f"HTTP {self.status}{message}"


class _Net:
    """Every request doctor makes; the key goes only to the target's allowed origins."""

    def __init__(self, client: Any, target: Target, timeout: float) -> None:
        from kvswitch.redact import Redactor

        self.client = client
        self.target = target
        self.timeout = timeout
        key = target.key
        self.redact = Redactor([key, _clean_key(key)] if key else [])

    def auth(self, url: str, key: str | None) -> dict[str, str]:
        key = key_for(url, self.target.allowed, key)
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def get(self, url: str, key: str | None = None) -> _Answer:
        import asyncio
        import json

        import httpx

        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout * 2):  # a body that trickles forever ends too
                async with self.client.stream("GET", url, headers=self.auth(url, key)) as response:
                    body = bytearray()
                    async for chunk in response.aiter_bytes():  # decoded, so a gzip bomb meets the cap
                        body += chunk
                        if len(body) > _MAX_ANSWER:
                            return _Answer(
                                error=tr("HTTP {status} with an answer over {size} MiB (not read)").format(
                                    status=response.status_code, size=_MAX_ANSWER // (1024 * 1024)
                                )
                            )
                    status = response.status_code
        except httpx.LocalProtocolError:
            return _Answer(refused=True, error="refused")
        except httpx.ConnectError as exc:
            return _Answer(error=self.redact(_reason(exc)))  # the transport says "cannot connect to …" and why
        except (httpx.TimeoutException, TimeoutError):
            return _Answer(error=tr("no answer within {seconds} s").format(seconds=f"{self.timeout:g}"))
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
            return _Answer(error=f"{type(exc).__name__}")
        data: Any = None
        try:  # the server's words, keys masked before anything is cut from them
            data = json.loads(self.redact(body.decode("utf-8", "replace")), parse_constant=lambda _: None)
        except ValueError:
            data = None
        return _Answer(status, data, ms=(time.perf_counter() - t0) * 1000)

    async def chat(
        self, url: str, model: str, prompt: str, key: str | None, extra_headers: dict[str, str] | None = None
    ) -> RequestResult:
        from kvswitch.probe.client import chat_body, stream_chat

        body = chat_body(model, prompt, 1)
        headers = {**self.auth(url, key), **(extra_headers or {})}
        result = await stream_chat(
            self.client,
            url,
            body,
            headers,
            mode=(extra_headers or {}).get("X-Cache-Mode", "plain"),
            stall_timeout=self.timeout,
            total_timeout=self.timeout * 2,
            redact=self.redact.text,
        )
        if result.error and "LocalProtocolError" in result.error:
            result.error = _not_sent()
        return result


_MAX_ANSWER = 4 * 1024 * 1024
"""The most bytes doctor reads of one plain (not streamed) answer, such as a model list."""


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text[:160]


def _refused(r: RequestResult) -> bool:
    return r.error == _not_sent()


def _like(template: str, text: str) -> bool:
    """Whether ``text`` is ``template`` with its placeholders filled in (any language)."""
    pattern = ".*?".join(re.escape(part) for part in re.split(r"\{[^{}]*\}", template))
    return re.fullmatch(pattern, text, re.DOTALL) is not None


def _stalled(r: RequestResult) -> bool:
    """Whether the request stalled or ran past its deadline (the probe client's own words)."""
    if not r.error:
        return False
    return any(
        _like(template, r.error)
        for template in (
            tr("stalled: no data for {seconds} s"),
            tr("stalled: no complete response head within {seconds} s"),
            tr("no complete answer within {seconds} s"),
        )
    ) or r.error.startswith("stalled")


_PROMPT_WORDS = [
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
    "page",
    "slot",
    "queue",
    "budget",
]


def prompt_words(n: int, seed: int) -> list[str]:
    """``n`` deterministic filler words; different seeds give different sequences."""
    out = []
    x = seed * 7919 + 17
    for _ in range(max(1, n)):
        x = (x * 1103515245 + 12345) % (2**31)
        out.append(_PROMPT_WORDS[(x >> 8) % len(_PROMPT_WORDS)])
    return out


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
            source=_KNOWN,
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
        saw = _join(
            [
                saw,
                tr("cached_tokens: varying {varying}, repeated {repeated}").format(
                    varying=", ".join(map(str, cached_v)) or "–", repeated=", ".join(map(str, cached_r)) or "–"
                ),
            ]
        )
    else:
        saw = _join([saw, tr("the server reports no cached_tokens")])
    partial_hits = len(set(cached_v)) > 1
    v_range, r_range = max(v) - min(v), max(r) - min(r)
    swings = vs > SWING and v_range >= SWING_MIN_MS and v_range > 2 * r_range
    name = profile or "PROFILE"
    if swings and prefix_cache is False:
        return Check(
            "prefix-cache",
            "warn",
            _join(
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
            _MEASURING,
        )
    if swings or (partial_hits and vs > SWING and v_range >= SWING_MIN_MS):
        state = (
            tr("prefix cache on: TTFT swings with each prompt's cache hit rate")
            if prefix_cache
            else tr("prefix cache on or unknown: TTFT swings with each prompt's cache hit rate")
        )
        return Check("prefix-cache", "warn", _join([saw, state]), _prefix_fix().format(profile=name), _MEASURING)
    if vs > SWING and rs > SWING and r_range >= SWING_MIN_MS:
        return Check(
            "prefix-cache",
            "warn",
            _join([saw, tr("the repeated prompt swings as much, so it is not the prefix cache: load or the network")]),
            tr("measure with more runs at a quieter time (kvswitch probe --runs 20)"),
            _MEASURING,
        )
    return Check("prefix-cache", "pass", saw, source=_MEASURING)


async def _network_checks(t: Target, s: DoctorSettings) -> list[Check]:
    from kvswitch.network import NetworkSettingsError, async_client, proxy_for

    out: list[Check] = []
    skip = s.skip

    def skipped(name: str, why: str, source: str = "") -> None:
        if name not in skip:
            out.append(Check(name, "skip", why, source=source))

    names = ("url-convention", "auth", "model", "split", "prefix-cache")
    async with async_client(timeout=s.timeout) as client:
        net = _Net(client, t, s.timeout)
        # reachable ---------------------------------------------------------------------------
        reach = await net.get(t.base_url) if _origin(t.base_url) else _Answer(error=tr("not an http(s) URL"))
        try:
            proxy = proxy_for(t.base_url)
        except NetworkSettingsError:
            proxy = None  # the request itself failed and says why
        if reach.status is None:
            fix = (
                tr(
                    "start the server, or correct the address and port: kvswitch profile edit {profile} --base-url URL"
                ).format(profile=t.profile)
                if t.profile
                else tr("start the server, or correct the address and port")
            )
            fix = _join(
                [
                    fix,
                    tr(
                        "check that no firewall or proxy is in the way (kvswitch honours HTTPS_PROXY, "
                        "HTTP_PROXY and NO_PROXY for addresses that are not this machine)"
                    ),
                ]
            )
            out.append(Check("reachable", "fail", f"GET {_show_url(t.base_url)}: {reach.describe()}", fix))
            for name in names:
                skipped(name, tr("the base URL is not reachable"))
            return out
        saw = tr("GET {url} answered HTTP {status} in {ms} ms").format(
            url=_show_url(t.base_url), status=reach.status, ms=f"{reach.ms:.0f}"
        )
        if proxy is not None:
            saw += _paren(
                tr("through the proxy {proxy} from {variable}").format(proxy=proxy.shown, variable=proxy.variable)
            )
        out.append(Check("reachable", "pass", saw))
        # URL convention --------------------------------------------------------------------
        base = t.base_url  # joined as clients join it: a trailing '/' gives '//' (S-24)
        answers = {conv: await net.get(base + _paths(conv)[0], t.key) for conv in ("append-v1", "includes-v1")}
        works = [c for c, a in answers.items() if a.models is not None]
        guessed = guess_convention(base)
        detected: str | None = None
        if len(works) == 1:
            detected = works[0]
            other = "includes-v1" if detected == "append-v1" else "append-v1"
            how = tr("{works} lists models, {fails} does not").format(
                works=_show_url(base + _paths(detected)[0]), fails=_show_url(base + _paths(other)[0])
            )
        elif len(works) == 2:
            detected = guessed
            how = tr(
                "both <base>/v1/models and <base>/models answer; going by the base URL's ending: {convention}"
            ).format(convention=detected)
        else:
            how = tr("neither <base>/v1/models nor <base>/models lists models ({answers})").format(
                answers=", ".join(f"{c}: {a.describe()}" for c, a in answers.items())
            )
        if "url-convention" not in skip:
            denied = all(a.refused or a.status in (401, 403) for a in answers.values())
            out.append(_convention_check(t, detected, how, ambiguous=len(works) == 2, denied=denied))
        convention = detected or t.url_convention or guessed
        models_path, chat_path = _paths(convention)
        listing = answers[convention]
        # auth and model -------------------------------------------------------------------
        chat = await net.chat(base + chat_path, t.model, "Say OK.", t.key)
        auth = await _auth_check(net, t, listing, chat, models_path, chat_path)
        if "auth" not in skip:
            out.append(auth)
        if auth.status == "fail":
            for name in ("model", "split", "prefix-cache"):
                skipped(name, tr("the server refused the request (see auth)"))
            return out
        model = _model_check(t, listing, chat, base + chat_path)
        if "model" not in skip:
            out.append(model)
        # split ----------------------------------------------------------------------------
        if "split" not in skip:
            out.append(await _split_check(net, t, convention))
        # prefix cache --------------------------------------------------------------------
        if "prefix-cache" not in skip:
            if model.status == "fail":
                skipped("prefix-cache", tr("the model check failed, so no request can be timed"), _MEASURING)
            else:
                out.append(await _prefix_check(net, t, s, base + chat_path))
    return out


def _convention_check(t: Target, detected: str | None, how: str, *, ambiguous: bool, denied: bool) -> Check:
    if detected is None and denied:
        return Check(
            "url-convention",
            "skip",
            tr("the server refused both model-list requests, so the convention cannot be told (see auth)"),
        )
    if detected is None:
        return Check(
            "url-convention",
            "skip",
            _join([how, tr("the convention cannot be told from here")]),
            tr("a base ending in /v1 takes includes-v1, a gateway base like https://host/api takes append-v1"),
        )
    if t.url_convention is None:
        return Check(
            "url-convention",
            "pass",
            tr("{how} → {convention} (for kvswitch probe: --url-convention {convention})").format(
                how=how, convention=detected
            ),
        )
    if t.url_convention == detected:
        return Check(
            "url-convention",
            "pass",
            _join([how, tr("the profile says {convention}: they agree").format(convention=t.url_convention)]),
        )
    saw = _join(
        [
            how,
            tr("the profile says {convention}").format(convention=t.url_convention),
            tr("clients would call {url}").format(url=_show_url(t.base_url + _paths(t.url_convention)[1])),
        ]
    )
    if ambiguous:
        saw += _paren(tr("a lenient server answers both; a strict one would not"))
    return Check("url-convention", "warn", saw, f"kvswitch profile edit {t.profile} --url-convention {detected}")


async def _auth_check(
    net: _Net, t: Target, listing: _Answer, chat: RequestResult, models_path: str, chat_path: str
) -> Check:
    key = t.key
    denied_chat = chat.status in (401, 403) or _refused(chat)
    denied_list = listing.status in (401, 403) or listing.refused
    rate = chat.status == 429 or listing.status == 429
    key_ws = _key_problem(key)
    slash = t.base_url.endswith("/")
    if not denied_chat and not denied_list:
        if rate:
            return Check(
                "auth",
                "warn",
                tr("the server accepted the request but answered 429 (rate limited or out of quota)"),
                tr("check the key's status and quota with the provider"),
                _KNOWN,
            )
        if key:
            what = tr("the server accepted the request with the key")
        elif t.key_note:
            what = tr("the server accepted the request without a key ({reason})").format(reason=t.key_note)
        else:
            what = tr("the server accepted the request without a key")
        if key_ws:
            return Check(
                "auth",
                "warn",
                _join(
                    [
                        what,
                        tr(
                            "but the key has whitespace or a line break (KVS210): other clients will send it as it is "
                            "and get "
                            "401"
                        ),
                    ]
                ),
                _key_fix(t),
                _KNOWN,
            )
        return Check(
            "auth",
            "pass",
            what
            + _paren(
                _join(
                    [
                        f"GET …{models_path}: {listing.describe()}",
                        f"POST …{chat_path}: " + ("HTTP 200" if chat.ok else str(chat.error)),
                    ]
                )
            ),
        )
    seen = (
        f"POST {_show_url(t.base_url + chat_path)}: {chat.error}"
        if denied_chat
        else f"GET {_show_url(t.base_url + models_path)}: {listing.describe()}"
    )
    saw = [seen]
    fixes = []
    if key is None:
        saw.append(tr("no key was sent: {reason}").format(reason=t.key_note or tr("none is set")))
        fixes.append(
            tr("set the key: kvswitch key set {profile}").format(profile=t.profile)
            if t.profile
            else tr("give --api-key-env NAME")
        )
    if key_ws:
        saw.append(tr("the key has leading/trailing whitespace or a line break (KVS210)"))
        fixes.append(_key_fix(t))
    if slash:
        saw.append(
            tr("the base URL ends with '/', so clients join it into a path with '//', which breaks auth (KVS201)")
        )
        fixed_url = t.base_url.rstrip("/")
        command = (
            f"kvswitch profile edit {t.profile} --base-url {fixed_url}" if t.profile else f"--base-url {fixed_url}"
        )
        fixes.append(tr("remove the trailing slash: {command} (or kvswitch lint --fix)").format(command=command))
    if key_ws or slash:
        retry_base = t.base_url.rstrip("/") if slash else t.base_url
        retry_key = _clean_key(key) if key is not None and key_ws else key
        again = await net.get(retry_base + models_path, retry_key)
        accepted = again.status == 200
        if again.status == 404:
            r2 = await net.chat(retry_base + chat_path, t.model, "Say OK.", retry_key)
            accepted = r2.status not in (None, 401, 403) and not _refused(r2)
        if key_ws and slash:
            saw.append(
                tr(
                    "with the whitespace removed from the key and the trailing '/' removed the server accepts "
                    "the request"
                )
                if accepted
                else tr(
                    "with the whitespace removed from the key and the trailing '/' removed the server still refuses it"
                )
            )
        elif key_ws:
            saw.append(
                tr("with the whitespace removed from the key the server accepts the request")
                if accepted
                else tr("with the whitespace removed from the key the server still refuses it")
            )
        else:
            saw.append(
                tr("with the trailing '/' removed the server accepts the request")
                if accepted
                else tr("with the trailing '/' removed the server still refuses it")
            )
    last = tr(
        "if that is not it: check the key's status and quota with the provider first, and that it is this "
        "gateway's or instance's key"
    )
    if t.key_ref and t.key_ref.startswith("env:"):
        last = _join([last, tr("then set ${name} to the right key").format(name=t.key_ref.removeprefix("env:"))])
    elif t.profile:
        last = _join([last, tr("then store it: kvswitch key set {profile}").format(profile=t.profile)])
    fixes.append(last)
    return Check("auth", "fail", _join(saw), _join(fixes), _KNOWN)


def _key_fix(t: Target) -> str:
    if t.key_ref and t.key_ref.startswith("env:"):
        return tr("fix ${name}: no whitespace or line breaks around or inside the key").format(
            name=t.key_ref.removeprefix("env:")
        )
    if t.profile:
        return tr(
            "paste the key again without whitespace or line breaks: kvswitch key set {profile} "
            "(for an env:NAME key, fix the variable's value)"
        ).format(profile=t.profile)
    return tr("fix the environment variable's value: no whitespace or line breaks in the key")


def _model_check(t: Target, listing: _Answer, chat: RequestResult, chat_url: str) -> Check:
    ids = listing.models
    listed = ids is not None and t.model in ids
    ctx = _context_length(listing, t.model)
    shown_ids = ""
    if ids:
        close = difflib.get_close_matches(t.model, ids, n=3, cutoff=0.3)
        names = ", ".join(close or ids[:5])
        shown_ids = (tr("similar ids: {ids}") if close else tr("it lists: {ids}")).format(ids=names)
        if len(ids) > len(close or ids[:5]):
            shown_ids += _paren(tr("{count} in all").format(count=len(ids)))
    name = t.profile or "PROFILE"
    model = repr(t.model)
    fix = (
        tr("use an id the server lists: kvswitch profile edit {profile} --model ID").format(profile=t.profile)
        if t.profile
        else tr("use an id the server lists (--model ID)")
    )
    if chat.ok:
        if ids is None:
            return Check(
                "model",
                "pass",
                _join([tr("{model} answers a chat request; the server has no model list").format(model=model), *ctx]),
                source=_KNOWN,
            )
        if not listed:
            return Check(
                "model",
                "warn",
                _join(
                    [
                        tr("{model} answers but is not in the server's model list (an alias?)").format(model=model),
                        shown_ids,
                    ]
                ),
                fix,
                _KNOWN,
            )
        return Check(
            "model",
            "pass",
            _join(
                [
                    tr("{model} is listed and answers (TTFT {ms} ms)").format(
                        model=model, ms=f"{(chat.ttft or 0) * 1000:.0f}"
                    ),
                    *ctx,
                ]
            ),
            source=_KNOWN,
        )
    where = f"POST {_show_url(chat_url)}: {chat.error}"
    if ids is None and chat.status == 404:
        return Check(
            "model",
            "fail",
            _join(
                [
                    where,
                    tr(
                        "the server has no model list to compare with, so either the model id {model} or the path is "
                        "wrong"
                    ).format(model=model),
                ]
            ),
            tr(
                "check the id against the provider's model list and the URL convention: kvswitch profile edit "
                "{profile} --url-convention append-v1|includes-v1"
            ).format(profile=name),
            _KNOWN,
        )
    if chat.status == 404 or (ids is not None and not listed):
        return Check(
            "model",
            "fail",
            _join([where, tr("{model} is not in the server's model list").format(model=model), shown_ids]),
            _join([fix, tr("check the context length there too")]),
            _KNOWN,
        )
    return Check(
        "model",
        "fail",
        tr("{model} is listed, but a one-token chat request failed: {error}").format(model=model, error=chat.error),
        tr("see the server's log for the cause"),
        _KNOWN,
    )


def _context_length(listing: _Answer, model: str) -> list[str]:
    """``["context length N"]`` when the model list says, else nothing."""
    if not isinstance(listing.data, dict) or not isinstance(listing.data.get("data"), list):
        return []
    for m in listing.data["data"]:
        if isinstance(m, dict) and m.get("id") == model:
            for k in ("max_model_len", "context_length", "context_window", "max_context_length"):
                if isinstance(m.get(k), int):
                    return [tr("context length {tokens}").format(tokens=m[k])]
    return []


async def _split_check(net: _Net, t: Target, convention: str) -> Check:
    own_url = t.split_url is not None and t.split_url != t.base_url
    has_endpoints = own_url or (
        t.prefill is not None and t.decode is not None and not (t.prefill == t.decode == t.base_url)
    )
    if t.mode != "split":
        saw = tr("mode is {mode}: no split request sent").format(mode=t.mode)
        if has_endpoints:
            saw += _paren(tr("the profile has split endpoints; check them with --mode split"))
        return Check("split", "skip", saw, source=_KNOWN)
    prefill, decode = t.prefill or t.base_url, t.decode or t.base_url
    unreachable = []
    for label, url in (
        (tr("prefill endpoint {url}: {problem}"), prefill),
        (tr("decode endpoint {url}: {problem}"), decode),
    ):
        if url == t.base_url:
            continue
        answer = await net.get(url)
        if answer.status is None:
            unreachable.append(label.format(url=_show_url(url), problem=answer.describe()))
    profile = t.profile or "PROFILE"
    if unreachable:
        return Check(
            "split",
            "fail",
            _join(unreachable),
            tr(
                "start the instance or correct its address: kvswitch profile edit {profile} "
                "--prefill-base-url URL --decode-base-url URL"
            ).format(profile=profile),
            _KNOWN,
        )
    same = _same_address(prefill, decode)
    route_base = t.split_url or t.base_url
    url = route_base + _paths(convention)[1]
    headers = {MODE_HEADER: "split"} if t.split_header else {}
    how = (
        tr("the profile's split URL")
        if own_url
        else tr("the base URL with {header}: split").format(header=MODE_HEADER)
        if t.split_header
        else tr("the base URL")
    )
    result = await net.chat(url, t.model, "Say OK.", t.key, headers)
    where = (
        tr("prefill and decode are the same address ({url})").format(url=_show_url(prefill))
        if same
        else tr("prefill {prefill}, decode {decode}").format(prefill=_show_url(prefill), decode=_show_url(decode))
    )
    if _stalled(result):
        return Check(
            "split",
            "fail",
            _join(
                [
                    where,
                    tr("a split request to {how} ({url}) stalled ({error}): the KV hand-off hangs").format(
                        how=how, url=_show_url(url), error=result.error
                    ),
                ]
            ),
            _split_fix(),
            _KNOWN,
        )
    if not result.ok:
        return Check(
            "split",
            "fail",
            _join([where, tr("a split request to {how} failed: {error}").format(how=how, error=result.error)]),
            _split_fix(),
            _KNOWN,
        )
    if same:
        return Check(
            "split",
            "warn",
            _join(
                [
                    where,
                    tr(
                        "a split request to {how} answered, so something behind that address handles split — unless "
                        "it is a "
                        "real prefill/decode deployment, split requests time out (KVS111)"
                    ).format(how=how),
                ]
            ),
            tr(
                "give the prefill and decode instances their own addresses: kvswitch profile edit {profile} "
                "--prefill-base-url URL --decode-base-url URL; with one instance use merged"
            ).format(profile=profile),
            _KNOWN,
        )
    return Check(
        "split",
        "pass",
        _join(
            [
                where,
                tr("distinct and reachable; a split request to {how} answered (TTFT {ms} ms)").format(
                    how=how, ms=f"{(result.ttft or 0) * 1000:.0f}"
                ),
            ]
        ),
        source=_KNOWN,
    )


async def _prefix_check(net: _Net, t: Target, s: DoctorSettings, url: str) -> Check:
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
            _join([check.saw, tr("failures: {error}").format(error=errors[0])]),
            tr("see the model check"),
            _MEASURING,
        )
    return check


# -- GPUs ---------------------------------------------------------------------------------


def _prefix_smi_fix() -> str:
    return tr("check that the prefix command runs nvidia-smi on that instance (or pass --smi PATH)")


def _gpu_checks(t: Target | None, s: DoctorSettings) -> list[Check]:
    from kvswitch.probe.gpu import GpuSampler

    want = [n for n in ("nvidia-smi", "same-gpu") if n not in s.skip]
    if not want:
        return []
    prefixes: dict[str, list[str]] = {}
    if s.prefill_prefix:
        prefixes["prefill"] = list(s.prefill_prefix)
    if s.decode_prefix:
        prefixes["decode"] = list(s.decode_prefix)
    if prefixes and len(prefixes) == 1:
        prefixes.setdefault("decode" if "prefill" in prefixes else "prefill", [])
    local_only = not prefixes
    if local_only:
        prefixes = {"local": []}
        if shutil.which(s.smi) is None and not _nvml_present():
            out = []
            if "nvidia-smi" in want:
                out.append(
                    Check(
                        "nvidia-smi",
                        "skip",
                        tr(
                            "{smi} is not on this machine's PATH and NVML is not available: GPU memory cannot be read "
                            "here "
                            "(kvswitch probe reports it as n/a)"
                        ).format(smi=s.smi),
                        tr(
                            "install the NVIDIA driver tools where the GPUs are, or reach each instance with "
                            "--prefill-prefix 'ssh HOST' --decode-prefix 'ssh HOST' (or --smi PATH)"
                        ),
                    )
                )
            if "same-gpu" in want:
                out.append(
                    Check(
                        "same-gpu",
                        "skip",
                        tr("no nvidia-smi: which GPU each instance uses cannot be read"),
                        tr("give --prefill-prefix and --decode-prefix"),
                        _KNOWN,
                    )
                )
            return out
    sampler = GpuSampler(interval_ms=100, prefixes=prefixes, smi=s.smi)
    sampler.start()
    try:
        deadline = time.monotonic() + s.gpu_seconds
        while time.monotonic() < deadline and not sampler.unavailable:
            seen = {x.instance for x in list(sampler.samples)}
            if (sampler.source == "NVML" and sampler.samples) or all(i in seen for i in prefixes):
                break
            time.sleep(0.05)
    finally:
        sampler.stop()
    samples = list(sampler.samples)
    gpus: dict[str, list[str]] = {}
    for x in samples:
        gpus.setdefault(x.instance, [])
        if x.uuid not in gpus[x.instance]:
            gpus[x.instance].append(x.uuid)
    out = []
    missing = [i for i in prefixes if i not in gpus]
    if "nvidia-smi" in want:
        via = {i: (" ".join(p) if p else tr("this machine")) for i, p in prefixes.items()}
        if sampler.unavailable or missing == list(prefixes):
            why = sampler.unavailable or tr("no readable output")
            out.append(
                Check(
                    "nvidia-smi",
                    "skip" if local_only else "warn",
                    tr("no GPU readings ({reason})").format(reason=why),
                    _prefix_smi_fix() if not local_only else tr("install the NVIDIA driver tools where the GPUs are"),
                )
            )
        elif missing:
            read = ", ".join(
                ntr("{instance} via {via}: {count} GPU", "{instance} via {via}: {count} GPUs", len(gpus[i])).format(
                    instance=i, via=via[i], count=len(gpus[i])
                )
                for i in gpus
            )
            none = ", ".join(tr("{instance} via {via}").format(instance=i, via=via[i]) for i in missing)
            out.append(
                Check(
                    "nvidia-smi",
                    "warn",
                    tr("readings from {read}; none from {missing}").format(read=read, missing=none),
                    _prefix_smi_fix(),
                )
            )
        else:
            out.append(
                Check(
                    "nvidia-smi",
                    "pass",
                    f"{sampler.source}: "
                    + _join(
                        [
                            tr("{instance} via {via}: {gpus}").format(instance=i, via=via[i], gpus=", ".join(gpus[i]))
                            for i in gpus
                        ]
                    ),
                )
            )
    if "same-gpu" in want:
        out.append(_same_gpu_check(t, s, gpus, sampler.shared_gpus(), local_only, missing))
    return out


def _nvml_present() -> bool:
    import importlib.util

    return importlib.util.find_spec("pynvml") is not None


def _same_gpu_check(
    t: Target | None,
    s: DoctorSettings,
    gpus: dict[str, list[str]],
    shared: list[str],
    local_only: bool,
    missing: list[str],
) -> Check:
    fix = tr(
        "put prefill and decode on different GPUs (e.g. CUDA_VISIBLE_DEVICES per instance) or nodes; with one "
        "GPU use merged: kvswitch switch merged"
    )
    if not local_only:
        if missing:
            return Check(
                "same-gpu",
                "skip",
                tr("no readings from {missing}, so the GPUs cannot be compared").format(missing=", ".join(missing)),
                tr("check the prefix commands"),
                _KNOWN,
            )
        if shared:
            return Check(
                "same-gpu",
                "warn",
                tr(
                    "prefill and decode report the same GPU ({gpus}): they are only logically split, so scheduling "
                    "overhead adds memory instead of saving it"
                ).format(gpus=", ".join(shared)),
                fix,
                _KNOWN,
            )
        return Check(
            "same-gpu",
            "pass",
            tr("prefill on {prefill}; decode on {decode}: different cards").format(
                prefill=", ".join(gpus.get("prefill", [])), decode=", ".join(gpus.get("decode", []))
            ),
            source=_KNOWN,
        )
    if t is None:
        return Check("same-gpu", "skip", tr("no profile to check (see config)"), source=_KNOWN)
    if t.mode != "split":
        return Check(
            "same-gpu",
            "skip",
            tr("mode is {mode}: one instance, nothing to compare").format(mode=t.mode),
            source=_KNOWN,
        )
    local = gpus.get("local", [])
    both_here = is_loopback_url(t.prefill or t.base_url) and is_loopback_url(t.decode or t.base_url)
    if both_here and len(local) == 1:
        return Check(
            "same-gpu",
            "warn",
            tr("prefill and decode both run on this machine, which has one GPU ({gpu}): they share it").format(
                gpu=local[0]
            ),
            fix,
            _KNOWN,
        )
    saw = tr("which GPU each instance uses cannot be told from here")
    if both_here:
        saw += _paren(
            ntr("this machine has {count} GPU", "this machine has {count} GPUs", len(local)).format(count=len(local))
        )
    return Check(
        "same-gpu",
        "skip",
        saw,
        tr(
            "give --prefill-prefix and --decode-prefix: commands that run "
            "nvidia-smi on each instance, e.g. 'ssh prefill-host'"
        ),
        _KNOWN,
    )


# -- all of it ----------------------------------------------------------------------------


def run_doctor(s: DoctorSettings) -> DoctorReport:
    """Run every check (but those in ``s.skip``); never prints, never raises for a finding."""
    import asyncio

    from kvswitch.redact import redact

    checks: list[Check] = []
    config, results, unreadable, config_fail = _lint_all(s)
    if config_fail is not None:
        checks.append(config_fail)
    elif results or unreadable:
        checks.append(_config_check(results, unreadable))
    target, why = _target_from_settings(s, config)
    if why is not None:  # no such profile: that is the config check's failure
        checks = [c for c in checks if c.name != "config" or c.status == "fail"] or [why]
        if checks[0] is not why:
            checks[0] = Check("config", "fail", _join([checks[0].saw, why.saw]), _join([checks[0].fix, why.fix]))
    checks.append(_key_variables_check(config))
    mode = target.mode if target else (config.model.mode if config else "merged")
    checks.append(_chunk_check(results, mode))
    if target is None:
        for name in ("reachable", "url-convention", "auth", "model", "split", "prefix-cache"):
            checks.append(Check(name, "skip", tr("no profile to check (see config)")))
    else:
        checks.extend(asyncio.run(_network_checks(target, s)))
    checks.extend(_gpu_checks(target, s))
    checks = [c for c in checks if c.name not in s.skip]
    order = {n: i for i, n in enumerate(CHECKS)}
    checks.sort(key=lambda c: order.get(c.name, len(order)))
    keys = [target.key, _clean_key(target.key)] if target and target.key else []
    if keys:
        checks = [Check(c.name, c.status, redact(c.saw, keys), redact(c.fix, keys), c.source) for c in checks]
    return DoctorReport(checks, target)
