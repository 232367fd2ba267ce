"""``kvswitch probe``: TTFT, ITL and GPU memory per mode, side by side."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kvswitch.cli._target import add_target_options

__all__ = ["mode_endpoints", "register", "settings_from_args"]

ASK_ABOVE_TOKENS = 20_000
"""Above this many tokens to a host that is not loopback, the probe asks first (D-12)."""

APIS = ("chat", "completions", "responses", "messages")
_PASSIVE_ONLY = {"gateway": "--gateway", "window": "--window", "requests": "--requests", "past": "--past",
                 "apis": "--api"}
_WITH_PASSIVE = {"help", "passive", "modes", "format", "no_history", *_PASSIVE_ONLY}
"""The options ``--passive`` takes (``--no-history`` too: a passive report is never kept)."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "probe",
        help="measure TTFT, ITL and GPU memory in each mode, side by side",
        description="Send streamed chat requests in each mode (interleaved), measure TTFT (first token-bearing "
        "delta), TTFB, ITL, TPOT and E2E, sample GPU memory (NVML or one nvidia-smi loop) and the backend's "
        "/metrics, and compare split with merged (median ratio with a 95 % bootstrap interval). Default: the "
        "active profile. Exit 0 when every request succeeded, 1 when some failed or the probe was refused.",
    )
    src = add_target_options(p, base_url_help="probe this URL instead of a profile's",
                             model_help="model id (needed with --base-url; with a profile, instead of its model)")
    src.add_argument("--url-convention", choices=("append-v1", "includes-v1"))
    how = p.add_argument_group("modes and routing")
    how.add_argument("--mode", action="append", choices=("merged", "split"), dest="modes",
                     help="repeat for both (default: merged and split)")
    how.add_argument("--routing", choices=("auto", "header", "endpoint", "switch"), default="auto",
                     help="auto: each mode's own URL where the profile (merged.url, split.url) "
                     "or --endpoint gives one, else the X-Cache-Mode header on the one base URL (experimental); "
                     "switch: flip the registered clients before each mode's runs")
    how.add_argument("--endpoint", action="append", default=[], metavar="MODE=URL",
                     help="a mode's own base URL (e.g. split=http://router:8000/v1)")
    load = p.add_argument_group("load")
    load.add_argument("--runs", type=int, default=10, help="measured batches per mode (10)")
    load.add_argument("--warmup", type=int, default=2, help="warm-up requests per mode, not measured (2)")
    g = load.add_mutually_exclusive_group()
    g.add_argument("--prompt-tokens", type=int, default=256, help="prompt length in words ≈ tokens (256)")
    g.add_argument("--article-prompt", action="store_true", help="the article's prompt, repeated 8 times (S-21)")
    load.add_argument("--max-tokens", type=int, default=128, help="output tokens per request (128, S-34)")
    load.add_argument("--no-cache-bust", action="store_true",
                      help="send the same prompt every time (prefix cache hits; S-28) instead of a nonce at the start")
    load.add_argument("--concurrency", type=int, default=1, help="requests per batch, sent together (1)")
    load.add_argument("--background", type=int, default=0,
                      help="long generations kept running while TTFT is sampled (decode load; 0)")
    load.add_argument("--background-max-tokens", type=int, default=512)
    load.add_argument("--timeout", type=float, default=300.0, help="whole request, seconds (300)")
    load.add_argument("--stall-timeout", type=float, default=30.0, help="no data for this long fails a request (30)")
    gpu = p.add_argument_group("GPU memory and metrics")
    gpu.add_argument("--no-gpu", action="store_true", help="do not sample GPU memory")
    gpu.add_argument("--smi", default="nvidia-smi", help="the nvidia-smi to run")
    gpu.add_argument("--gpu-prefix", action="append", default=[], metavar="INSTANCE=CMD",
                     help="sample an instance through a command prefix, e.g. prefill='ssh p-host' (repeat)")
    gpu.add_argument("--no-metrics", action="store_true", help="do not scrape the backend's /metrics")
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("text", "json"), default="text")
    out.add_argument("--yes", action="store_true", help="spend tokens on a remote host without asking")
    out.add_argument("--no-history", action="store_true", help="do not append the report to the history")
    out.add_argument("--combine", nargs="+", metavar="REPORT.json",
                     help="measure nothing: show JSON reports of single modes (kvswitch probe --format json) "
                     "side by side, with the comparison recomputed")
    passive = p.add_argument_group("passive: from the gateway's traffic")
    passive.add_argument("--passive", action="store_true",
                         help="send nothing: read the timings kvswitch's gateway keeps of the real requests it "
                         "carries, per mode and API (real traffic, not a controlled experiment); with --mode, "
                         "--format and the options below only")
    passive.add_argument("--gateway", metavar="URL",
                         help="the gateway's URL, on this machine (default: the running gateway)")
    passive.add_argument("--window", type=float, metavar="SECONDS",
                         help="watch this long (60; with --requests, until they came unless given)")
    passive.add_argument("--requests", type=int, metavar="N", help="end the window once N requests per mode came")
    passive.add_argument("--past", action="store_true",
                         help="look back over the last --window seconds the gateway kept instead of waiting")
    passive.add_argument("--api", action="append", choices=APIS, dest="apis",
                         help="only this API's requests (repeat; default: all four)")
    active_only = {a.dest: (a.option_strings[0], a.default) for a in p._actions
                   if a.option_strings and a.dest not in _WITH_PASSIVE}
    p.set_defaults(func=run, active_only=active_only)


def settings_from_args(args: argparse.Namespace) -> Any:
    """ProbeSettings from the command line and the profile (the key only for its own hosts)."""
    import shlex

    from kvswitch.cli._handler import UsageError
    from kvswitch.key_scope import KeyScope
    from kvswitch.probe.runner import ProbeSettings
    from kvswitch.validate import InvalidValueError, check_url, show

    endpoints = {}
    for item in args.endpoint:
        mode, _, url = item.partition("=")
        if mode not in ("merged", "split") or not url:
            raise UsageError(f"--endpoint takes MODE=URL, not {show(item)}")
        try:
            url = check_url(url, "address")
        except InvalidValueError as exc:
            raise UsageError(f"--endpoint {mode}=…: {exc.code} {exc.message}") from None
        endpoints[mode] = url
    prefixes: dict[str, list[str]] = {}
    for item in args.gpu_prefix:
        name, _, cmd = item.partition("=")
        if not name or not cmd:
            raise UsageError(f"--gpu-prefix takes INSTANCE=CMD, not {item!r}")
        prefixes[name] = shlex.split(cmd)
    common: dict[str, Any] = {
        "modes": tuple(args.modes or ("merged", "split")), "routing": args.routing, "runs": args.runs,
        "warmup": args.warmup, "prompt_tokens": args.prompt_tokens, "article_prompt": args.article_prompt,
        "max_tokens": args.max_tokens, "cache_bust": not args.no_cache_bust, "concurrency": args.concurrency,
        "background": args.background, "background_max_tokens": args.background_max_tokens,
        "request_timeout": args.timeout, "stall_timeout": args.stall_timeout, "gpu": not args.no_gpu,
        "smi": args.smi, "metrics": not args.no_metrics, "gpu_prefixes": prefixes or {"local": []},
    }
    if min(args.runs, args.concurrency, args.max_tokens, args.prompt_tokens) < 1 or args.warmup < 0:
        raise UsageError("--runs, --concurrency, --max-tokens and --prompt-tokens must be at least 1")
    if args.base_url:
        if not args.model:
            raise UsageError("--base-url needs --model")
        if args.profile:
            raise UsageError("give --profile or --base-url, not both")
        from kvswitch.keys import env_key

        key = env_key(args.api_key_env) if args.api_key_env else None  # checked: no U+200B in a header
        if args.api_key_env and not key:
            raise UsageError(f"${args.api_key_env} is not set")
        # the key of --api-key-env goes to --base-url's origin only, never to an --endpoint elsewhere
        return ProbeSettings(base_url=args.base_url, model=args.model, api_key=key,
                             key_origins=KeyScope.of(key, [args.base_url]).origins,
                             endpoints=endpoints, url_convention=args.url_convention, **common)
    from kvswitch.config import read_config
    from kvswitch.keys import resolve_key

    config = read_config()
    name, profile = config.profile(args.profile)
    for mode, url in mode_endpoints(profile).items():
        endpoints.setdefault(mode, url)
    key = resolve_key(name, profile.key)
    # the profile's key goes only to the addresses the profile names (an --endpoint elsewhere gets none)
    named = (profile.base_url, profile.split.prefill_base_url, profile.split.decode_base_url,
             profile.mode_url("merged"), profile.mode_url("split"))
    return ProbeSettings(base_url=profile.base_url, model=args.model or profile.model,
                         api_key=key, key_origins=KeyScope.of(key, named).origins, endpoints=endpoints,
                         url_convention=args.url_convention or profile.url_convention, **common)


def mode_endpoints(profile: Any) -> dict[str, str]:
    """Each mode's own URL, as the clients use it; none when both modes share one URL and the
    profile sends the ``X-Cache-Mode`` header (the probe then routes by that header)."""
    merged, split = profile.mode_url("merged"), profile.mode_url("split")
    if merged == split and profile.mode_header:
        return {}
    return {"merged": merged, "split": split}


def run(args: argparse.Namespace) -> int:
    import asyncio
    import threading

    from kvswitch.probe.report import build_report, dumps, save_history
    from kvswitch.probe.runner import estimate, run_probe

    if args.passive:
        return _passive(args)
    given = [flag for dest, flag in _PASSIVE_ONLY.items() if getattr(args, dest) not in (None, False)]
    if given:
        from kvswitch.cli._handler import UsageError

        raise UsageError(f"{', '.join(given)} go{'es' if len(given) == 1 else ''} with --passive")
    if args.combine:
        return _combine(args)

    s = settings_from_args(args)
    requests, tokens, remote = estimate(s)
    if remote and tokens > ASK_ABOVE_TOKENS and not args.yes:
        what = f"{requests} requests, up to {tokens:,} tokens, to {', '.join(remote)}"
        if not sys.stdin.isatty():
            print(f"kvswitch: this probe sends {what}; run again with --yes to go ahead", file=sys.stderr)
            return 1
        answer = input(f"This probe sends {what}. Go ahead? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("kvswitch: probe not run", file=sys.stderr)
            return 1
    switcher = None
    if s.routing == "switch":
        from kvswitch.clients import switch_clients

        def switcher(mode: str) -> None:
            switch_clients(mode)  # type: ignore[arg-type]

    tty = sys.stderr.isatty() and args.format == "text"

    def progress(done: int, total: int, mode: str) -> None:
        if tty:
            width = 30
            filled = int(width * done / max(total, 1))
            print(f"\r[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {mode:<7}", end="", file=sys.stderr, flush=True)

    cancel = threading.Event()
    try:
        raw = asyncio.run(run_probe(s, progress=progress, cancel=cancel, switcher=switcher))
    except KeyboardInterrupt:
        cancel.set()
        raise
    if tty:
        print(file=sys.stderr)
    report = build_report(raw)
    if not args.no_history:
        save_history(report)
    if args.format == "json":
        print(dumps(report, indent=2))
    else:
        print(render_text(report))
    failed = sum(m["failures"] for m in report["modes"].values())
    return 1 if failed or report["cancelled"] else 0


def _passive(args: argparse.Namespace) -> int:
    """``--passive``: the gateway's own timings of its real traffic, as a probe report."""
    import signal
    import threading

    from kvswitch.cli._handler import UsageError
    from kvswitch.probe.passive import PassiveSettings, run_passive
    from kvswitch.probe.report import dumps

    refused = [flag for dest, (flag, default) in sorted(args.active_only.items(), key=lambda kv: kv[1][0])
               if getattr(args, dest) != default]
    if refused:
        raise UsageError(f"--passive sends no request of its own, so {', '.join(refused)} "
                         f"do{'es' if len(refused) == 1 else ''} not go with it (it takes --mode, --format, "
                         "--gateway, --window, --requests, --past and --api)")
    if args.window is not None and not (0 <= args.window < float("inf")):
        raise UsageError("--window takes a number of seconds, 0 or more")
    if args.requests is not None and args.requests < 1:
        raise UsageError("--requests must be at least 1")
    if args.past and args.requests is not None:
        raise UsageError("--past reads what the gateway kept at once; --requests waits for more: give one")
    window = args.window if args.window is not None else (None if args.requests else 60.0)
    url, upstreams = _gateway(args.gateway)
    s = PassiveSettings(gateway=url, token=_gateway_token(), window=window, requests=args.requests,
                        modes=tuple(dict.fromkeys(args.modes or ("merged", "split"))),
                        apis=tuple(dict.fromkeys(args.apis or ())), past=args.past, upstreams=upstreams)
    tty = sys.stderr.isatty() and not args.past

    def progress(w: Any, left: float | None) -> None:
        if tty:
            counts = w.counts()
            seen = " · ".join(f"{m} {counts.get(m, 0)}" for m in s.modes)
            rest = f" · {left:.0f} s left" if left is not None else ""
            print(f"\rwatching the gateway: {seen}{rest} (Ctrl-C ends the window)  ", end="", file=sys.stderr,
                  flush=True)

    cancel = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        def end_window(signum: int, frame: Any) -> None:
            cancel.set()  # the first Ctrl-C ends the window; a second one interrupts
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)

        previous = signal.signal(signal.SIGINT, end_window)
    try:
        report = run_passive(s, cancel=cancel, progress=progress)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if tty:
            print(file=sys.stderr)
    print(dumps(report, indent=2) if args.format == "json" else render_text(report))
    return 0


def _gateway(option: str | None) -> tuple[str, dict[str, str]]:
    """The gateway's URL and, when it is the running gateway, its upstreams. The token goes only
    to this machine: a loopback URL, or the running gateway's own."""
    from kvswitch.addresses import is_loopback_url
    from kvswitch.cli._handler import UsageError
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.control import running
    from kvswitch.probe.passive import PassiveError
    from kvswitch.validate import InvalidValueError, check_url

    if option is None:
        info = running()
        if info is None:
            raise PassiveError("the gateway is not running (kvswitch gateway --detach starts it; --gateway URL "
                               "names another)")
        return info.url, dict(info.upstreams)
    try:
        url = check_url(option, "--gateway").rstrip("/")
    except InvalidValueError as exc:
        raise UsageError(f"{exc.code} {exc.message}") from None
    try:
        info = running()
    except KvswitchError:  # the running gateway's control socket cannot be used: only loopback then
        info = None
    ours = info is not None and _origin(info.url) == _origin(url)
    if not ours and not is_loopback_url(url):
        from kvswitch.validate import show

        raise UsageError(f"--gateway {show(url)} is not on this machine: the gateway's token is sent only to a "
                         "loopback address or to the running gateway's own URL (kvswitch gateway status)")
    return url, dict(info.upstreams) if ours and info is not None else {}


def _origin(url: str) -> tuple[str, str, int | None]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _gateway_token() -> str:
    from kvswitch.config import read_config
    from kvswitch.gateway.token import load_token
    from kvswitch.probe.passive import PassiveError

    token = load_token(read_config())
    if token is None:
        raise PassiveError("the gateway has no token yet (kvswitch gateway pin or kvswitch gateway run makes it)")
    return token


def _combine(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kvswitch.cli._handler import UsageError
    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_bytes
    from kvswitch.probe.report import combine_reports, dumps, save_history

    reports = []
    for name in args.combine:
        try:
            reports.append(json.loads(read_bytes(Path(name)).decode("utf-8")))
        except KvswitchError as exc:
            raise UsageError(f"{name}: {exc}") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{name}: not a probe report ({str(exc)[:200]})") from None
    try:
        report = combine_reports(reports)
    except ValueError as exc:
        raise UsageError(f"--combine: {exc}") from None
    if not args.no_history:
        save_history(report)  # so that `kvswitch advise --from-probe latest` finds the comparison
    print(dumps(report, indent=2) if args.format == "json" else render_text(report))
    return 0


def _f(value: Any, unit: str = "ms") -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "–"
    return f"{value:.1f} {unit}" if unit else f"{value:.2f}"


def _d(value: Any, *path: str) -> Any:
    """``value[path[0]][path[1]]…``, or ``None`` where a step is missing (a report read from a
    file may lack anything)."""
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value


def _ratio(comparison: Any, name: str) -> tuple[float, float, float] | None:
    """(split/merged, low, high) of a comparison's ratio, or ``None`` where any is missing or
    not a number."""
    r, ci = _d(comparison, name), _d(comparison, name, "ci95")
    if not isinstance(r, dict) or not isinstance(ci, list) or len(ci) != 2:
        return None
    value: Any = r.get("split/merged")
    lo, hi = ci
    return (value, lo, hi) if all(_f(x) != "–" for x in (value, lo, hi)) else None


def render_text(report: dict[str, Any]) -> str:
    """The report as a table and notes (what the CLI prints)."""
    s = report.get("settings") if isinstance(report.get("settings"), dict) else {}
    assert isinstance(s, dict)
    passive = s.get("passive") is True
    lines = [
        _passive_head(s) if passive else
        f"kvswitch probe · {s.get('model')} @ {s.get('base_url')} · {s.get('runs')} runs × {s.get('concurrency')} "
        f"per mode (+{s.get('warmup')} warm-up), prompt {s.get('prompt')}, max_tokens {s.get('max_tokens')}"
        + (f", {s['background']} background stream(s)" if s.get("background") else ""),
        "",
        f"{'mode':<7} {'ok/n':>7} {'TTFT med':>10} {'p90':>10} {'p99':>10} {'TTFB med':>10} {'ITL p99':>10} "
        f"{'TPOT med':>10} {'bg ITL p99':>11}",
    ]
    modes = report.get("modes") if isinstance(report.get("modes"), dict) else {}
    assert isinstance(modes, dict)
    for mode, m in modes.items():
        n, failed = _d(m, "requests"), _d(m, "failures")
        ratio = f"{n - failed}/{n}" if isinstance(n, int) and isinstance(failed, int) else "?"
        lines.append(
            f"{mode!s:<7} {ratio:>7} {_f(_d(m, 'ttft_ms', 'median')):>10} {_f(_d(m, 'ttft_ms', 'p90')):>10} "
            f"{_f(_d(m, 'ttft_ms', 'p99')):>10} {_f(_d(m, 'ttfb_ms', 'median')):>10} {_f(_d(m, 'itl_ms', 'p99')):>10} "
            f"{_f(_d(m, 'tpot_ms', 'median')):>10} {_f(_d(m, 'background_itl_ms', 'p99')):>11}"
        )
    lines.append("")
    comp = report.get("comparison")
    if (r := _ratio(comp, "ttft_median_ratio")) is not None:
        value, lo, hi = r
        verdict = ("split is faster to first token" if hi < 1 else "merged is faster to first token" if lo > 1
                   else "no difference the interval can show")
        if passive:
            verdict += " on this traffic (not a controlled experiment: see the notes)"
        lines.append(f"TTFT median split/merged: {value:.2f} (95 % bootstrap interval {lo:.2f}–{hi:.2f}): {verdict}")
    if (r := _ratio(comp, "itl_p99_ratio")) is not None:
        lines.append(f"ITL p99 split/merged: {r[0]:.2f} (95 % interval {r[1]:.2f}–{r[2]:.2f})")
    lines.append("")
    for mode, m in modes.items():
        lines.append(f"{mode}: routed by {_d(m, 'routed_by')} → {_d(m, 'url')}")
        key = _d(m, "key")
        if isinstance(key, str) and key not in ("sent", "none"):
            lines.append(f"  {key}")
        causes = _d(m, "failure_causes")
        if _d(m, "failures") and isinstance(causes, dict):
            for cause, count in causes.items():
                lines.append(f"  {count} failed: {cause}")
        apis = _d(m, "apis")
        if isinstance(apis, dict):
            lines += [_api_line(str(api), a) for api, a in apis.items()]
        mem = _d(m, "gpu_memory")
        if isinstance(mem, str):
            lines.append(f"  GPU memory: {mem}")
        elif isinstance(mem, dict):
            for uuid, g in mem.items():
                lines.append(f"  GPU {uuid} ({_d(g, 'instance')}): baseline {_f(_d(g, 'baseline_mib'), 'MiB')}, "
                             f"peak {_f(_d(g, 'peak_mib'), 'MiB')}, Δ {_f(_d(g, 'delta_mib'), 'MiB')}")
        metrics = _d(m, "metrics")
        if isinstance(metrics, str):
            lines.append(f"  backend metrics: {metrics}")
        elif isinstance(metrics, dict):
            shown = ", ".join(f"{k} {v:g}" if _f(v) != "–" else f"{k} –" for k, v in metrics.items())
            lines.append(f"  backend metrics (during the mode's runs): {shown}")
    lines.append("")
    notes = report.get("notes") if isinstance(report.get("notes"), list) else []
    assert isinstance(notes, list)
    lines += [f"· {note}" for note in notes]
    return "\n".join(lines)


def _passive_head(s: dict[str, Any]) -> str:
    """The first line of a passive report: which gateway, which window, which APIs."""
    apis = s.get("apis")
    shown = "all APIs" if not isinstance(apis, list) else "/".join(map(str, apis))
    until = f", until {s['requests_per_mode']} requests per mode" if s.get("requests_per_mode") else ""
    look = "looking back " if s.get("look") == "past" else ""
    when = f"{str(s.get('began'))[11:19]}–{str(s.get('ended'))[11:19]}"
    seconds = s.get("seconds")
    span = f"{seconds:g} s" if isinstance(seconds, int | float) and not isinstance(seconds, bool) else "? s"
    return (f"kvswitch probe --passive · the gateway at {s.get('gateway')} · {look}{span} "
            f"({when}{until}) · {shown}")


def _api_line(api: str, a: Any) -> str:
    n, failed = _d(a, "requests"), _d(a, "failures")
    ok = f"{n - failed}/{n}" if isinstance(n, int) and isinstance(failed, int) else "?"
    return (f"  {api:<12} {ok:>7} ok · TTFT median {_f(_d(a, 'ttft_ms', 'median'))}, p90 "
            f"{_f(_d(a, 'ttft_ms', 'p90'))} · ITL p99 {_f(_d(a, 'itl_ms', 'p99'))}")
