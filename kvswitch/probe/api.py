"""The probe's front door: settings for a profile or a URL, what a run would spend, the run itself
(a typed report), and the history. The CLI (``kvswitch probe``) and the tray's probe window both
come through here, so the same choices send the same requests.

A key goes only where :mod:`kvswitch.key_scope` allows: a profile's key to the addresses the
profile names, a key from ``api_key_env`` to ``base_url``'s origin; never to another endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from kvswitch.errors import KvswitchError
from kvswitch.i18n import tr

if TYPE_CHECKING:
    from kvswitch.literals import CacheMode
    from kvswitch.probe.runner import ProbeSettings, Routing
    from kvswitch.probe.shapes import Report

__all__ = [
    "ASK_ABOVE_TOKENS",
    "MODES",
    "Flag",
    "ProbeSettingsError",
    "Spend",
    "mode_endpoints",
    "record",
    "run",
    "settings_for",
    "spend",
]

ASK_ABOVE_TOKENS = 20_000
"""Above this many tokens to a host that is not loopback, the probe asks first (D-12)."""

MODES = ("merged", "split")

Progress = Callable[[int, int, str], None]
"""``on_progress(done, total, mode)``."""


class Flag(Protocol):
    """What ``cancel`` is: anything with ``is_set()`` (a :class:`threading.Event`)."""

    def is_set(self) -> bool: ...


class ProbeSettingsError(KvswitchError):
    """Probe settings that cannot be used (the CLI reports it as a usage error)."""


def settings_for(
    *,
    profile: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    url_convention: str | None = None,
    endpoints: Mapping[str, str] | None = None,
    gpu_prefixes: Mapping[str, Sequence[str]] | None = None,
    modes: Sequence[str] | None = None,
    routing: Routing = "auto",
    runs: int = 10,
    warmup: int = 2,
    prompt_tokens: int = 256,
    article_prompt: bool = False,
    max_tokens: int = 128,
    cache_bust: bool = True,
    concurrency: int = 1,
    background: int = 0,
    background_max_tokens: int = 512,
    request_timeout: float = 300.0,
    stall_timeout: float = 30.0,
    gpu: bool = True,
    smi: str = "nvidia-smi",
    metrics: bool = True,
) -> ProbeSettings:
    """The settings of a probe of ``base_url`` (with ``model`` and, optionally, the key in
    ``$api_key_env``) or of a profile (``profile``, else the active one; ``model`` overrides its
    model). ``endpoints`` are modes' own base URLs, already checked (a profile's mode URLs fill in
    the rest); they get no key unless the profile names them. :class:`ProbeSettingsError` for
    choices that do not go together; the config's own errors as they are."""
    from kvswitch.key_scope import KeyScope
    from kvswitch.probe.runner import ProbeSettings

    chosen: dict[str, str] = dict(endpoints or {})
    common: dict[str, Any] = {
        "modes": tuple(modes or MODES),
        "routing": routing,
        "runs": runs,
        "warmup": warmup,
        "prompt_tokens": prompt_tokens,
        "article_prompt": article_prompt,
        "max_tokens": max_tokens,
        "cache_bust": cache_bust,
        "concurrency": concurrency,
        "background": background,
        "background_max_tokens": background_max_tokens,
        "request_timeout": request_timeout,
        "stall_timeout": stall_timeout,
        "gpu": gpu,
        "smi": smi,
        "metrics": metrics,
        "gpu_prefixes": {name: list(cmd) for name, cmd in (gpu_prefixes or {}).items()} or {"local": []},
    }
    if min(runs, concurrency, max_tokens, prompt_tokens) < 1 or warmup < 0:
        raise ProbeSettingsError(tr("--runs, --concurrency, --max-tokens and --prompt-tokens must be at least 1"))
    if base_url:
        if not model:
            raise ProbeSettingsError(tr("--base-url needs --model"))
        if profile:
            raise ProbeSettingsError(tr("give --profile or --base-url, not both"))
        from kvswitch.keys import env_key

        key = env_key(api_key_env) if api_key_env else None  # checked: no U+200B in a header
        if api_key_env and not key:
            raise ProbeSettingsError(tr("${name} is not set").format(name=api_key_env))
        # the key of api_key_env goes to base_url's origin only, never to an endpoint elsewhere
        return ProbeSettings(
            base_url=base_url,
            model=model,
            api_key=key,
            key_origins=KeyScope.of(key, [base_url]).origins,
            endpoints=chosen,
            url_convention=url_convention,
            **common,
        )
    from kvswitch.config import read_config
    from kvswitch.keys import resolve_key

    name, p = read_config().profile(profile)
    for mode, url in mode_endpoints(p).items():
        chosen.setdefault(mode, url)
    key = resolve_key(name, p.key)
    # the profile's key goes only to the addresses the profile names (an endpoint elsewhere gets none)
    named = (
        p.base_url,
        p.split.prefill_base_url,
        p.split.decode_base_url,
        p.mode_url("merged"),
        p.mode_url("split"),
    )
    return ProbeSettings(
        base_url=p.base_url,
        model=model or p.model,
        api_key=key,
        key_origins=KeyScope.of(key, named).origins,
        endpoints=chosen,
        url_convention=url_convention or p.url_convention,
        **common,
    )


def mode_endpoints(profile: Any) -> dict[str, str]:
    """Each mode's own URL, as the clients use it; none when both modes share one URL and the
    profile sends the ``X-Cache-Mode`` header (the probe then routes by that header)."""
    merged, split = profile.mode_url("merged"), profile.mode_url("split")
    if merged == split and profile.mode_header:
        return {}
    return {"merged": merged, "split": split}


class Spend(NamedTuple):
    """What a probe would send: requests, tokens at most, and the hosts that are not this machine."""

    requests: int
    tokens: int
    remote: list[str]

    @property
    def asks_first(self) -> bool:
        """Whether to ask before spending: more than :data:`ASK_ABOVE_TOKENS` to a remote host."""
        return bool(self.remote) and self.tokens > ASK_ABOVE_TOKENS


def spend(settings: ProbeSettings) -> Spend:
    """What the probe of ``settings`` would spend (nothing is sent)."""
    from kvswitch.probe.runner import estimate

    return Spend(*estimate(settings))


def run(
    settings: ProbeSettings,
    *,
    on_progress: Progress | None = None,
    cancel: Flag | None = None,
    switcher: Callable[[str], None] | None = None,
) -> Report:
    """Run the probe (its own event loop, in this thread) and build its report: no key in it, no
    NaN. ``cancel`` stops it after the batch in flight (the report says ``cancelled``); with
    ``switch`` routing the registered clients are flipped before each mode's runs unless
    ``switcher`` does something else."""
    import asyncio

    from kvswitch.probe.report import build_report
    from kvswitch.probe.runner import run_probe

    if switcher is None and settings.routing == "switch":
        switcher = _switch_clients
    raw = asyncio.run(run_probe(settings, progress=on_progress, cancel=cancel, switcher=switcher))
    return build_report(raw)


def _switch_clients(mode: str) -> None:
    from kvswitch.clients import switch_clients

    switch_clients(cast("CacheMode", mode))


def record(report: Report) -> None:
    """Append ``report`` to the history (``<history>/probe.jsonl``; ``advise --from-probe latest``
    reads the newest)."""
    from kvswitch.probe.report import save_history

    save_history(report)
