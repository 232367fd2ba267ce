"""``kvswitch probe``: TTFT, ITL and GPU memory per mode, side by side."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvswitch.cli._target import add_target_options
from kvswitch.i18n import ntr, tr

if TYPE_CHECKING:
    from kvswitch.probe.runner import ProbeSettings
    from kvswitch.probe.shapes import Report

__all__ = ["pad", "register", "render_text", "settings_from_args"]

APIS = ("chat", "completions", "responses", "messages")
_PASSIVE_ONLY = {
    "gateway": "--gateway",
    "window": "--window",
    "requests": "--requests",
    "past": "--past",
    "apis": "--api",
}
_WITH_PASSIVE = {"help", "passive", "modes", "format", "no_history", *_PASSIVE_ONLY}
"""The options ``--passive`` takes (``--no-history`` too: a passive report is never kept)."""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "probe",
        help=tr("measure TTFT, ITL and GPU memory in each mode, side by side"),
        description=tr(
            "Send streamed chat requests in each mode (interleaved), measure TTFT (first token-bearing "
            "delta), TTFB, ITL, TPOT and E2E, sample GPU memory (NVML or one nvidia-smi loop) and the "
            "backend's /metrics, and compare split with merged (median ratio with a 95 % bootstrap "
            "interval). Default: the active profile. Exit 0 when every request succeeded, 1 when some "
            "failed or the probe was refused."
        ),
    )
    src = add_target_options(
        p,
        base_url_help=tr("probe this URL instead of a profile's"),
        model_help=tr("model id (needed with --base-url; with a profile, instead of its model)"),
    )
    src.add_argument("--url-convention", choices=("append-v1", "includes-v1"))
    how = p.add_argument_group(tr("modes and routing"))
    how.add_argument(
        "--mode",
        action="append",
        choices=("merged", "split"),
        dest="modes",
        help=tr("repeat for both (default: merged and split)"),
    )
    how.add_argument(
        "--routing",
        choices=("auto", "header", "endpoint", "switch"),
        default="auto",
        help=tr(
            "auto: each mode's own URL where the profile (merged.url, split.url) or --endpoint "
            "gives one, else the X-Cache-Mode header on the one base URL (experimental); switch: "
            "flip the registered clients before each mode's runs"
        ),
    )
    how.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="MODE=URL",
        help=tr("a mode's own base URL (e.g. split=http://router:8000/v1)"),
    )
    load = p.add_argument_group(tr("load"))
    load.add_argument("--runs", type=int, default=10, help=tr("measured batches per mode (10)"))
    load.add_argument("--warmup", type=int, default=2, help=tr("warm-up requests per mode, not measured (2)"))
    g = load.add_mutually_exclusive_group()
    g.add_argument("--prompt-tokens", type=int, default=256, help=tr("prompt length in words ≈ tokens (256)"))
    g.add_argument(
        "--article-prompt",
        action="store_true",
        help=tr("a fixed long prompt instead: one Chinese question about the KV cache, repeated 8 times"),
    )
    load.add_argument(
        "--max-tokens",
        type=int,
        default=128,
        help=tr("output tokens per request (128: long enough for ITL to mean something)"),
    )
    load.add_argument(
        "--no-cache-bust",
        action="store_true",
        help=tr("send the same prompt every time (prefix cache hits) instead of a nonce at the start"),
    )
    load.add_argument("--concurrency", type=int, default=1, help=tr("requests per batch, sent together (1)"))
    load.add_argument(
        "--background",
        type=int,
        default=0,
        help=tr("long generations kept running while TTFT is sampled (decode load; 0)"),
    )
    load.add_argument(
        "--background-max-tokens", type=int, default=512, help=tr("output tokens per background generation (512)")
    )
    load.add_argument("--timeout", type=float, default=300.0, help=tr("whole request, seconds (300)"))
    load.add_argument(
        "--stall-timeout", type=float, default=30.0, help=tr("no data for this long fails a request (30)")
    )
    gpu = p.add_argument_group(tr("GPU memory and metrics"))
    gpu.add_argument("--no-gpu", action="store_true", help=tr("do not sample GPU memory"))
    gpu.add_argument("--smi", default="nvidia-smi", help=tr("the nvidia-smi to run"))
    gpu.add_argument(
        "--gpu-prefix",
        action="append",
        default=[],
        metavar="INSTANCE=CMD",
        help=tr("sample an instance through a command prefix, e.g. prefill='ssh p-host' (repeat)"),
    )
    gpu.add_argument("--no-metrics", action="store_true", help=tr("do not scrape the backend's /metrics"))
    out = p.add_argument_group(tr("output"))
    out.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help=tr("text, or json: the report in kvswitch's JSON envelope"),
    )
    out.add_argument("--yes", action="store_true", help=tr("spend tokens on a remote host without asking"))
    out.add_argument("--no-history", action="store_true", help=tr("do not append the report to the history"))
    out.add_argument(
        "--combine",
        nargs="+",
        metavar="REPORT.json",
        help=tr(
            "measure nothing: show JSON reports of single modes (kvswitch probe --format json) "
            "side by side, with the comparison recomputed"
        ),
    )
    passive = p.add_argument_group(tr("passive: from the gateway's traffic"))
    passive.add_argument(
        "--passive",
        action="store_true",
        help=tr(
            "send nothing: read the timings kvswitch's gateway keeps of the real requests it "
            "carries, per mode and API (real traffic, not a controlled experiment); with "
            "--mode, --format and the options below only"
        ),
    )
    passive.add_argument(
        "--gateway", metavar="URL", help=tr("the gateway's URL, on this machine (default: the running gateway)")
    )
    passive.add_argument(
        "--window",
        type=float,
        metavar="SECONDS",
        help=tr("watch this long (60; with --requests, until they came unless given)"),
    )
    passive.add_argument("--requests", type=int, metavar="N", help=tr("end the window once N requests per mode came"))
    passive.add_argument(
        "--past",
        action="store_true",
        help=tr("look back over the last --window seconds the gateway kept instead of waiting"),
    )
    passive.add_argument(
        "--api",
        action="append",
        choices=APIS,
        dest="apis",
        help=tr("only this API's requests (repeat; default: all four)"),
    )
    active_only = {
        a.dest: (a.option_strings[0], a.default) for a in p._actions if a.option_strings and a.dest not in _WITH_PASSIVE
    }
    p.set_defaults(func=run, active_only=active_only)


def settings_from_args(args: argparse.Namespace) -> ProbeSettings:
    """ProbeSettings from the command line and the profile (the key only for its own hosts)."""
    import shlex

    from kvswitch.cli._handler import UsageError
    from kvswitch.probe.api import ProbeSettingsError, settings_for
    from kvswitch.validate import InvalidValueError, check_url, show

    endpoints = {}
    for item in args.endpoint:
        mode, _, url = item.partition("=")
        if mode not in ("merged", "split") or not url:
            raise UsageError(tr("--endpoint takes MODE=URL, not {value}").format(value=show(item)))
        try:
            url = check_url(url, "address")
        except InvalidValueError as exc:
            raise UsageError(
                tr("--endpoint {mode}=…: {code} {message}").format(mode=mode, code=exc.code, message=exc.message)
            ) from None
        endpoints[mode] = url
    prefixes: dict[str, list[str]] = {}
    for item in args.gpu_prefix:
        name, _, cmd = item.partition("=")
        if not name or not cmd:
            raise UsageError(tr("--gpu-prefix takes INSTANCE=CMD, not {value}").format(value=repr(item)))
        prefixes[name] = shlex.split(cmd)
    try:
        return settings_for(
            profile=args.profile,
            base_url=args.base_url,
            model=args.model,
            api_key_env=args.api_key_env,
            url_convention=args.url_convention,
            endpoints=endpoints,
            gpu_prefixes=prefixes,
            modes=args.modes,
            routing=args.routing,
            runs=args.runs,
            warmup=args.warmup,
            prompt_tokens=args.prompt_tokens,
            article_prompt=args.article_prompt,
            max_tokens=args.max_tokens,
            cache_bust=not args.no_cache_bust,
            concurrency=args.concurrency,
            background=args.background,
            background_max_tokens=args.background_max_tokens,
            request_timeout=args.timeout,
            stall_timeout=args.stall_timeout,
            gpu=not args.no_gpu,
            smi=args.smi,
            metrics=not args.no_metrics,
        )
    except ProbeSettingsError as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    import threading

    from kvswitch.probe.api import record, spend
    from kvswitch.probe.api import run as probe_run

    if args.passive:
        return _passive(args)
    given = [flag for dest, flag in _PASSIVE_ONLY.items() if getattr(args, dest) not in (None, False)]
    if given:
        from kvswitch.cli._handler import UsageError

        raise UsageError(
            ntr("{options} goes with --passive", "{options} go with --passive", len(given)).format(
                options=", ".join(given)
            )
        )
    if args.combine:
        return _combine(args)

    s = settings_from_args(args)
    cost = spend(s)
    if cost.asks_first and not args.yes:
        what = ntr(
            "{count} request, up to {tokens} tokens, to {hosts}",
            "{count} requests, up to {tokens} tokens, to {hosts}",
            cost.requests,
        ).format(count=cost.requests, tokens=f"{cost.tokens:,}", hosts=", ".join(cost.remote))
        if not sys.stdin.isatty():
            print(
                tr("kvswitch: this probe sends {what}; run again with --yes to go ahead").format(what=what),
                file=sys.stderr,
            )
            return 1
        answer = input(tr("This probe sends {what}. Go ahead? [y/N] ").format(what=what)).strip().lower()
        if answer not in ("y", "yes", "是"):
            print(tr("kvswitch: probe not run"), file=sys.stderr)
            return 1
    tty = sys.stderr.isatty() and args.format == "text"

    def progress(done: int, total: int, mode: str) -> None:
        if tty:
            width = 30
            filled = int(width * done / max(total, 1))
            print(
                f"\r[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {mode:<7}",
                end="",
                file=sys.stderr,
                flush=True,
            )

    cancel = threading.Event()
    try:
        report = probe_run(s, on_progress=progress, cancel=cancel)
    except KeyboardInterrupt:
        cancel.set()
        raise
    if tty:
        print(file=sys.stderr)
    if not args.no_history:
        record(report)
    failed = sum(m["failures"] for m in report["modes"].values())
    code = 1 if failed or report["cancelled"] else 0
    _show(args, report, code)
    return code


def _show(args: argparse.Namespace, report: Report, code: int) -> None:
    """The report as text, or as JSON in the envelope (command ``probe``)."""
    if args.format == "json":
        from kvswitch.cli.envelope import dumps
        from kvswitch.probe.report import finite

        print(dumps("probe", finite(report), ok=code == 0))
    else:
        print(render_text(report))


def _passive(args: argparse.Namespace) -> int:
    """``--passive``: the gateway's own timings of its real traffic, as a probe report."""
    import signal
    import threading

    from kvswitch.cli._handler import UsageError
    from kvswitch.probe.passive import PassiveSettings, run_passive

    refused = [
        flag
        for dest, (flag, default) in sorted(args.active_only.items(), key=lambda kv: kv[1][0])
        if getattr(args, dest) != default
    ]
    if refused:
        raise UsageError(
            ntr(
                "--passive sends no request of its own, so {options} does not go with it (it takes "
                "--mode, --format, --gateway, --window, --requests, --past and --api)",
                "--passive sends no request of its own, so {options} do not go with it (it takes "
                "--mode, --format, --gateway, --window, --requests, --past and --api)",
                len(refused),
            ).format(options=", ".join(refused))
        )
    if args.window is not None and not (0 <= args.window < float("inf")):
        raise UsageError(tr("--window takes a number of seconds, 0 or more"))
    if args.requests is not None and args.requests < 1:
        raise UsageError(tr("--requests must be at least 1"))
    if args.past and args.requests is not None:
        raise UsageError(tr("--past reads what the gateway kept at once; --requests waits for more: give one"))
    window = args.window if args.window is not None else (None if args.requests else 60.0)
    url, upstreams = _gateway(args.gateway)
    s = PassiveSettings(
        gateway=url,
        token=_gateway_token(),
        window=window,
        requests=args.requests,
        modes=tuple(dict.fromkeys(args.modes or ("merged", "split"))),
        apis=tuple(dict.fromkeys(args.apis or ())),
        past=args.past,
        upstreams=upstreams,
    )
    tty = sys.stderr.isatty() and not args.past

    def progress(w: Any, left: float | None) -> None:
        if tty:
            counts = w.counts()
            seen = " · ".join(f"{m} {counts.get(m, 0)}" for m in s.modes)
            rest = tr(" · {seconds} s left").format(seconds=f"{left:.0f}") if left is not None else ""
            line = tr("watching the gateway: {seen}{rest} (Ctrl-C ends the window)").format(seen=seen, rest=rest)
            print(f"\r{line}  ", end="", file=sys.stderr, flush=True)

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
    _show(args, report, 0)
    return 0


def _gateway(option: str | None) -> tuple[str, dict[str, str]]:
    """The gateway's URL and, when it is the running gateway, its upstreams. The token goes only
    to this machine: a loopback URL, or the running gateway's own."""
    from kvswitch.addresses import is_loopback_url
    from kvswitch.cli._handler import UsageError
    from kvswitch.errors import KvswitchError
    from kvswitch.gateway.control import running
    from kvswitch.probe.passive import PassiveError
    from kvswitch.urls import same_origin
    from kvswitch.validate import InvalidValueError, check_url

    if option is None:
        info = running()
        if info is None:
            raise PassiveError(
                tr("the gateway is not running (kvswitch gateway --detach starts it; --gateway URL names another)")
            )
        return info.url, dict(info.upstreams)
    try:
        url = check_url(option, "--gateway").rstrip("/")
    except InvalidValueError as exc:
        raise UsageError(f"{exc.code} {exc.message}") from None
    try:
        info = running()
    except KvswitchError:  # the running gateway's control socket cannot be used: only loopback then
        info = None
    ours = info is not None and same_origin(info.url, url)
    if not ours and not is_loopback_url(url):
        from kvswitch.validate import show

        raise UsageError(
            tr(
                "--gateway {url} is not on this machine: the gateway's token is sent only to a "
                "loopback address or to the running gateway's own URL (kvswitch gateway status)"
            ).format(url=show(url))
        )
    return url, dict(info.upstreams) if ours and info is not None else {}


def _gateway_token() -> str:
    from kvswitch.config import read_config
    from kvswitch.gateway.token import load_token
    from kvswitch.probe.passive import PassiveError

    token = load_token(read_config())
    if token is None:
        raise PassiveError(tr("the gateway has no token yet (kvswitch gateway pin or kvswitch gateway run makes it)"))
    return token


def _combine(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kvswitch.cli._handler import UsageError
    from kvswitch.errors import KvswitchError
    from kvswitch.io import read_bytes
    from kvswitch.probe.report import combine_reports, save_history

    reports = []
    for name in args.combine:
        try:
            reports.append(json.loads(read_bytes(Path(name)).decode("utf-8")))
        except KvswitchError as exc:
            raise UsageError(f"{name}: {exc}") from None
        except (OSError, ValueError) as exc:
            raise UsageError(
                tr("{file}: not a probe report ({reason})").format(file=name, reason=str(exc)[:200])
            ) from None
    try:
        report = combine_reports(reports)  # bare reports or envelopes, this version's or the one before
    except ValueError as exc:
        raise UsageError(f"--combine: {exc}") from None
    if not args.no_history:
        save_history(report)  # so that `kvswitch advise --from-probe latest` finds the comparison
    _show(args, report, 0)
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


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (a CJK character takes two)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, width: int, *, left: bool = False) -> str:
    """``text`` padded to ``width`` terminal columns, right-aligned unless ``left``."""
    pad = " " * max(0, width - _width(text))
    return text + pad if left else pad + text


_WIDTHS = (7, 7, 10, 10, 10, 10, 10, 10, 11)
"""The side-by-side table's narrowest column widths (terminal columns; a longer heading widens its column)."""


def _headings() -> list[str]:
    """The table's headings (numbers and units are never translated)."""
    return [
        tr("mode"),
        tr("ok/n"),
        tr("TTFT med"),
        "p90",
        "p99",
        tr("TTFB med"),
        "ITL p99",
        tr("TPOT med"),
        tr("bg ITL p99"),
    ]


def _row(cells: list[str], widths: list[int]) -> str:
    return " ".join(pad(text, width, left=i == 0) for i, (text, width) in enumerate(zip(cells, widths, strict=True)))


def render_text(report: Report | dict[str, Any]) -> str:
    """The report as a table and notes (what the CLI prints), in the user's language."""
    from kvswitch.probe.comparison import verdict

    s = report.get("settings") if isinstance(report.get("settings"), dict) else {}
    assert isinstance(s, dict)
    passive = s.get("passive") is True
    if passive:
        head = _passive_head(s)
    else:
        head = tr(
            "kvswitch probe · {model} @ {url} · {runs} runs × {concurrency} per mode (+{warmup} warm-up), "
            "prompt {prompt}, max_tokens {max_tokens}"
        ).format(
            model=s.get("model"),
            url=s.get("base_url"),
            runs=s.get("runs"),
            concurrency=s.get("concurrency"),
            warmup=s.get("warmup"),
            prompt=s.get("prompt"),
            max_tokens=s.get("max_tokens"),
        )
        if s.get("background"):
            head += ntr(", {count} background stream", ", {count} background streams", _int(s["background"])).format(
                count=s["background"]
            )
    headings = _headings()
    widths = [max(width, _width(text)) for width, text in zip(_WIDTHS, headings, strict=True)]
    lines = [head, "", _row(headings, widths).rstrip()]
    modes = report.get("modes") if isinstance(report.get("modes"), dict) else {}
    assert isinstance(modes, dict)
    for mode, m in modes.items():
        n, failed = _d(m, "requests"), _d(m, "failures")
        ratio = f"{n - failed}/{n}" if isinstance(n, int) and isinstance(failed, int) else "?"
        lines.append(
            _row(
                [
                    str(mode),
                    ratio,
                    _f(_d(m, "ttft_ms", "median")),
                    _f(_d(m, "ttft_ms", "p90")),
                    _f(_d(m, "ttft_ms", "p99")),
                    _f(_d(m, "ttfb_ms", "median")),
                    _f(_d(m, "itl_ms", "p99")),
                    _f(_d(m, "tpot_ms", "median")),
                    _f(_d(m, "background_itl_ms", "p99")),
                ],
                widths,
            )
        )
    lines.append("")
    comp = report.get("comparison")
    comp = comp if isinstance(comp, dict) else {}
    if (v := verdict(comp.get("ttft_median_ratio"))) is not None:
        said = (
            tr("split is faster to first token")
            if v.faster == "split"
            else tr("merged is faster to first token")
            if v.faster == "merged"
            else tr("no difference the interval can show")
        )
        if passive:
            said += tr(" on this traffic (not a controlled experiment: see the notes)")
        line = tr("TTFT median split/merged: {ratio} (95 % bootstrap interval {low}–{high}): {verdict}")
        lines.append(line.format(ratio=f"{v.ratio:.2f}", low=f"{v.low:.2f}", high=f"{v.high:.2f}", verdict=said))
    if (v := verdict(comp.get("itl_p99_ratio"))) is not None:
        lines.append(
            tr("ITL p99 split/merged: {ratio} (95 % interval {low}–{high})").format(
                ratio=f"{v.ratio:.2f}", low=f"{v.low:.2f}", high=f"{v.high:.2f}"
            )
        )
    lines.append("")
    for mode, m in modes.items():
        lines.append(
            tr("{mode}: routed by {route} → {url}").format(mode=mode, route=_d(m, "routed_by"), url=_d(m, "url"))
        )
        key = _d(m, "key")
        if isinstance(key, str) and key not in ("sent", "none"):
            lines.append(f"  {key}")
        causes = _d(m, "failure_causes")
        if _d(m, "failures") and isinstance(causes, dict):
            for cause, count in causes.items():
                lines.append("  " + tr("{count} failed: {cause}").format(count=count, cause=cause))
        apis = _d(m, "apis")
        if isinstance(apis, dict):
            lines += [_api_line(str(api), a) for api, a in apis.items()]
        mem = _d(m, "gpu_memory")
        if isinstance(mem, str):
            lines.append("  " + tr("GPU memory: {memory}").format(memory=mem))
        elif isinstance(mem, dict):
            for uuid, g in mem.items():
                line = tr("GPU {uuid} ({instance}): baseline {baseline}, peak {peak}, Δ {delta}")
                lines.append(
                    "  "
                    + line.format(
                        uuid=uuid,
                        instance=_d(g, "instance"),
                        baseline=_f(_d(g, "baseline_mib"), "MiB"),
                        peak=_f(_d(g, "peak_mib"), "MiB"),
                        delta=_f(_d(g, "delta_mib"), "MiB"),
                    )
                )
        metrics = _d(m, "metrics")
        if isinstance(metrics, str):
            lines.append("  " + tr("backend metrics: {metrics}").format(metrics=metrics))
        elif isinstance(metrics, dict):
            shown = ", ".join(f"{k} {v:g}" if _f(v) != "–" else f"{k} –" for k, v in metrics.items())
            lines.append("  " + tr("backend metrics (during the mode's runs): {metrics}").format(metrics=shown))
    lines.append("")
    notes = report.get("notes") if isinstance(report.get("notes"), list) else []
    assert isinstance(notes, list)
    lines += [f"· {note}" for note in notes]
    return "\n".join(lines)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 2


def _clock(when: Any) -> str:
    """An ISO time of a report as this machine's local clock time (``14:05:09``); ``?`` where
    it is not one."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(str(when))
    except ValueError:
        return "?"
    return (moment.astimezone() if moment.tzinfo else moment).strftime("%H:%M:%S")


def _passive_head(s: Mapping[str, Any]) -> str:
    """The first line of a passive report: which gateway, which window, which APIs."""
    apis = s.get("apis")
    shown = tr("all APIs") if not isinstance(apis, list) else "/".join(map(str, apis))
    until = (
        tr(", until {count} requests per mode").format(count=s["requests_per_mode"])
        if s.get("requests_per_mode")
        else ""
    )
    when = f"{_clock(s.get('began'))}–{_clock(s.get('ended'))}"
    seconds = s.get("seconds")
    span = f"{seconds:g} s" if isinstance(seconds, int | float) and not isinstance(seconds, bool) else "? s"
    if s.get("look") == "past":
        return tr(
            "kvswitch probe --passive · the gateway at {url} · looking back {span} ({when}{until}) · {apis}"
        ).format(url=s.get("gateway"), span=span, when=when, until=until, apis=shown)
    return tr("kvswitch probe --passive · the gateway at {url} · {span} ({when}{until}) · {apis}").format(
        url=s.get("gateway"), span=span, when=when, until=until, apis=shown
    )


def _api_line(api: str, a: Any) -> str:
    n, failed = _d(a, "requests"), _d(a, "failures")
    ok = f"{n - failed}/{n}" if isinstance(n, int) and isinstance(failed, int) else "?"
    return "  " + tr("{api} {ok} ok · TTFT median {median}, p90 {p90} · ITL p99 {itl}").format(
        api=pad(api, 12, left=True),
        ok=pad(ok, 7),
        median=_f(_d(a, "ttft_ms", "median")),
        p90=_f(_d(a, "ttft_ms", "p90")),
        itl=_f(_d(a, "itl_ms", "p99")),
    )
