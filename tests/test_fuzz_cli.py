"""Fuzzing the command line: every command's options with hostile strings (control characters,
ANSI escapes, invisible Unicode, huge text, paths, numbers out of range, malformed URLs) and
config files with hostile values. Whatever arrives, kvswitch answers with its own clear error:
never exit 3 (its internal-bug exit), never a traceback, never a raw terminal escape echoed back.

Every example runs in process in the test's sandbox (HOME, KVSWITCH_HOME), reset to a fresh
``kvswitch init`` before each example. Nothing reaches beyond 127.0.0.1 (the conftest guard, and
every address here is loopback or refused before any lookup); nothing runs a command from its
input (``--smi``, ``--*-prefix``, ``--command`` are left out) or writes outside the sandbox.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.clientenv import Result, cli, config_file, init

FUZZ = settings(
    max_examples=int(os.environ.get("KVSWITCH_FUZZ_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PROFILE = "A"
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, a connection is refused at once

# -- hostile values ----------------------------------------------------------------------------

_NASTY = [
    "",
    " ",
    "\t",
    "\n",
    "a\nb",
    "\r\n",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "\x7f",
    "\x08\x08",
    "\u200b",
    "\ufeff",
    "\u00a0",
    "\u2028",
    "\u202e",
    "zero\u200bwidth",
    "e\u0301",
    "日本語",
    "🙂",
    "\udcff",
    "../../x",
    "..",
    ".",
    "/",
    "//",
    "~",
    "~/x",
    "-",
    "--",
    "-x",
    "--help",
    "a" * 5000,
    "sk-live-7f3kQ9zR2mX8vB1nL4aA",
    "env:",
    "env:1X",
    "env:A B",
    "keyring",
    "none",
    "0",
    "-1",
    "-0",
    "1e309",
    "nan",
    "inf",
    "-inf",
    "NaN",
    "0x10",
    "１２",
    "99999999999999999999999",
    "2.5",
    "1_000",
    "true",
    "TRUE",
    "yes",
    "[]",
    "{}",
    '"',
    "'",
    "\\",
    "%s",
    "{0}",
    "$(id)",
    "`id`",
]
_URLS = [
    "file:///etc/passwd",
    "javascript:alert(1)",
    "http://127.0.0.1:99999/v1",
    "http://127.0.0.1:0",
    "http://127.0.0.1:8000/v1\r\nX-Evil: 1",
    "http://127.0.0.1:8000/v1?a=1",
    "http://127.0.0.1/#f",
    "http://u:sk-live-7f3kQ9zR2mX8vB1nL4aA@127.0.0.1/",
    "http://[::1",
    "http://",
    "http:///x",
    "http://127.0.0.1:abc",
    "http://127.0.0.1\u200b/",
    "ftp://127.0.0.1",
    "//127.0.0.1",
    "127.0.0.1:9",
    "http://127.0.0.1:9/v1/",
    DEAD,
    "https://localhost:9",
    "http://[::1]:9/",
    "http://127.0.0.1:9/%00",
    "http://127.0.0.1:9/" + "p" * 5000,
    "HTTP://127.0.0.1:9",
    "http://127.0.0.1:9/v1\x1b[31m",
]
_chars = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
_random = st.text(_chars, max_size=30)
hostile = st.sampled_from(_NASTY) | _random | st.integers(-(2**80), 2**80).map(str)
hostile_url = st.sampled_from(_URLS) | hostile


def _safe_path(text: str) -> str:
    """A hostile file name that stays inside the sandbox (the cwd): no '..', no absolute path."""
    parts = [p for p in text.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)[:200] or "missing.json"


paths = hostile.map(_safe_path) | st.sampled_from(["settings.json", "cc-switch/config.toml", "kvswitch.toml"])


def opt(name: str, values: st.SearchStrategy[str] = hostile) -> st.SearchStrategy[list[str]]:
    """``[--name VALUE]`` or nothing."""
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


def opts(*parts: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda t: [a for part in t for a in part])


_FIELDS = [
    "--provider",
    "--base-url",
    "--url-convention",
    "--model",
    "--key",
    "--chunk-size",
    "--prefill-base-url",
    "--decode-base-url",
    "--transfer-protocol",
    "--max-transfer-concurrency",
    "--probe-url",
    "--merged-url",
    "--split-url",
    "--kv-cache-dtype",
    "--prefix-cache",
    "--temperature",
    "--max-tokens",
    "--stream",
    "--timeout-seconds",
]
_field_opts = st.lists(
    st.sampled_from(_FIELDS).flatmap(lambda f: (hostile_url if "url" in f else hostile).map(lambda v: [f, v])),
    max_size=4,
).map(lambda pairs: [a for pair in pairs for a in pair])
names = hostile | st.just(PROFILE)
# probe's numbers are bounded after the hostile ones (argparse keeps the last), so a huge --runs
# is parsed but never run; the hostile ones are checked on their own in test_probe_numbers_*
_PROBE_BOUND = [
    "--runs",
    "1",
    "--warmup",
    "0",
    "--concurrency",
    "1",
    "--background",
    "0",
    "--max-tokens",
    "1",
    "--prompt-tokens",
    "8",
    "--timeout",
    "2",
    "--stall-timeout",
    "2",
    "--no-gpu",
    "--no-metrics",
    "--no-history",
    "--yes",
]

commands = st.one_of(
    opts(
        st.just(["init"]),
        opt("--profile", names),
        opt("--preset"),
        opt("--base-url", hostile_url),
        opt("--model"),
        opt("--url-convention"),
        opt("--mode"),
        opt("--key-env"),
        opt("--cline", paths),
        opt("--ccswitch", paths),
        st.just(["--no-key"]),
    ),
    opts(
        st.just(["lint"]),
        opt("--kind"),
        opt("--format"),
        st.sampled_from([[], ["--fix"], ["--hook"]]),
        paths.map(lambda p: [p]),
    ),
    opts(
        st.just(["switch"]),
        st.sampled_from(["merged", "split"]).map(lambda m: [m]),
        st.sampled_from([[], ["--dry-run"]]),
        st.lists(paths, max_size=2),
    ),
    opts(st.just(["status"]), opt("--format")),
    opts(
        st.just(["restore"]),
        st.sampled_from([["--list"], []]),
        opt("--id"),
        paths.map(lambda p: [p]),
    ),
    st.tuples(st.sampled_from(["list", "show", "use", "remove"]), names).map(
        lambda t: ["profile", t[0]] + ([] if t[0] == "list" else [t[1]])
    ),
    opts(st.just(["profile", "use", "--dry-run"]), names.map(lambda n: [n])),
    opts(st.just(["profile", "add"]), names.map(lambda n: [n]), opt("--preset"), _field_opts),
    opts(st.just(["profile", "edit"]), names.map(lambda n: [n]), _field_opts),
    opts(st.just(["profile", "rename"]), names.map(lambda n: [n]), names.map(lambda n: [n])),
    opts(
        st.just(["client", "add"]),
        paths.map(lambda p: [p]),
        opt("--name"),
        opt("--kind"),
        opt("--signal"),
        opt("--pidfile", paths),
        st.sampled_from([[], ["--nudge", "touch"], ["--nudge", "signal"]]),
    ),
    opts(st.just(["client"]), st.sampled_from([["list"], ["remove", "settings.json"]])),
    opts(
        st.just(["key"]),
        st.sampled_from(["get", "delete", "set"]).map(lambda a: [a]),
        names.map(lambda n: [n]),
    ),
    opts(
        st.just(["schema"]),
        opt("--kind"),
        st.sampled_from([[], ["--reference"], ["--check", "schemas"]]),
    ),
    opts(
        st.just(["advise"]),
        opt("--prompt-tokens"),
        opt("--concurrency"),
        opt("--gpus"),
        opt("--ttft-slo"),
        opt("--prefix-reuse"),
        opt("--workload"),
        opt("--from-probe", paths),
        opt("--format"),
    ),
    opts(
        st.just(["engine-flags"]),
        opt("--engine"),
        opt("--mode"),
        opt("--profile", names),
        opt("--transfer-backend"),
        st.sampled_from([[], ["--shared-gpu"]]),
        opt("--router"),
        opt("--router-mode"),
        opt("--router-policy"),
        opt("--router-metrics-port"),
        opt("--format"),
    ),
    opts(
        st.just(["doctor"]),
        opt("--profile", names),
        opt("--base-url", hostile_url),
        opt("--model"),
        opt("--api-key-env"),
        opt("--mode"),
        opt("--timeout", st.sampled_from(["0.5", "-1", "nan", "inf", "0"])),
        opt("--skip"),
        opt("--format"),
    ),
    opts(
        st.just(["probe"]),
        opt("--profile", names),
        opt("--base-url", hostile_url),
        opt("--model"),
        opt("--api-key-env"),
        opt("--url-convention"),
        opt("--mode"),
        opt("--routing"),
        opt("--endpoint", hostile_url.map(lambda u: f"split={u}")),
        opt("--endpoint"),
        opt("--runs"),
        opt("--timeout"),
        opt("--format"),
        st.just(_PROBE_BOUND),
    ),
    opts(st.just(["watch", "--once"]), opt("--policy"), opt("--debounce")),
    opts(st.just(["lab", "status"]), opt("--format")),
)

# -- the sandbox -------------------------------------------------------------------------------


class Sandbox:
    """The test's HOME and KVSWITCH_HOME after ``kvswitch init``, put back before each example."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dirs = [Path(os.environ["HOME"]), Path(os.environ["KVSWITCH_HOME"])]
        self.saved = root / "pristine"
        for i, d in enumerate(self.dirs):
            shutil.copytree(d, self.saved / str(i), symlinks=True)

    def reset(self) -> None:
        for i, d in enumerate(self.dirs):
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(self.saved / str(i), d, symlinks=True)
        os.chdir(self.dirs[0])


@pytest.fixture
def sandbox_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    init(profile=PROFILE, preset="vllm", model="m")
    assert cli("profile", "edit", PROFILE, "--base-url", DEAD).rc == 0
    monkeypatch.chdir(tmp_path)
    box = Sandbox(tmp_path / "saved")
    yield box


def assert_clear(argv: list[str], result: Result) -> None:
    """kvswitch's own answer: exit 0, 1 or 2, no traceback, no raw terminal escape echoed."""
    said = result.out + result.err
    assert result.rc in (0, 1, 2), (argv, result.rc, result.err[-2000:])
    assert "Traceback" not in said and "internal error" not in said, (argv, result.err[-2000:])
    if any("\x1b" in a for a in argv):
        assert "\x1b" not in said, (argv, said[-2000:])


@FUZZ
@given(argv=commands, stdin=hostile)
@example(argv=["profile", "add", "\x1b[31mred", "--base-url", DEAD, "--model", "m"], stdin="")
@example(argv=["profile", "edit", PROFILE, "--base-url", "file:///etc/passwd"], stdin="")
@example(
    argv=["probe", "--base-url", "http://127.0.0.1:99999/v1", "--model", "m", *_PROBE_BOUND],
    stdin="",
)
@example(argv=["key", "set", PROFILE], stdin="sk-abc\u200bdefghijklmnop\n")
@example(argv=["profile", "edit", PROFILE, "--temperature", "nan"], stdin="")
@example(argv=["profile", "rename", "", "keyring"], stdin="")  # '' was taken for the active profile
@example(argv=["init", "--profile", "B", "--base-url", DEAD, "--model", "\udcff", "--no-key"], stdin="")
@example(argv=["profile", "edit", PROFILE, "--max-tokens", "99999999999999999999999"], stdin="")
@example(
    argv=["probe", "--api-key-env", "ZWSP_KEY", "--base-url", DEAD, "--model", "m", *_PROBE_BOUND],
    stdin="",
)
def test_every_command_answers_hostile_arguments_clearly(
    sandbox_cli: Sandbox, monkeypatch: pytest.MonkeyPatch, argv: list[str], stdin: str
) -> None:
    sandbox_cli.reset()
    monkeypatch.setenv("ZWSP_KEY", "sk-abc\u200bdefghijklmnop")
    assert_clear(argv, cli(*argv, stdin=stdin))


@pytest.mark.parametrize(
    "option",
    [
        "--runs",
        "--warmup",
        "--concurrency",
        "--background",
        "--max-tokens",
        "--prompt-tokens",
        "--timeout",
        "--stall-timeout",
        "--background-max-tokens",
    ],
)
@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf", "1e309", "１２", "x", ""])
def test_probe_numbers_out_of_range_are_refused_or_bounded(sandbox_cli: Sandbox, option: str, value: str) -> None:
    # values that could be accepted are small here (0, １２ = 12 at most), so a run stays short
    argv = [
        "probe",
        "--base-url",
        DEAD,
        "--model",
        "m",
        "--no-gpu",
        "--no-metrics",
        "--no-history",
        "--yes",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--timeout",
        "2",
        "--stall-timeout",
        "2",
        option,
        value,
    ]
    assert_clear(argv, cli(*argv))


# -- hostile config values ---------------------------------------------------------------------

_scalar = (st.sampled_from(_NASTY) | st.sampled_from(_URLS) | _random).map(lambda s: ("str", s)) | st.one_of(
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.booleans()
).map(lambda v: ("num", v))
_CONFIG_SLOTS = [
    "active_profile",
    "mode",
    "profiles.{p}.base_url",
    "profiles.{p}.model",
    "profiles.{p}.key",
    "profiles.{p}.provider",
    "profiles.{p}.url_convention",
    "profiles.{p}.merged.chunk_size",
    "profiles.{p}.split.prefill_base_url",
    "profiles.{p}.split.probe_url",
    "profiles.{p}.merged.url",
    "profiles.{p}.split.url",
    "profiles.{p}.split.max_transfer_concurrency",
    "profiles.{p}.request.temperature",
    "profiles.{p}.request.timeout_seconds",
    "profiles.{p}.cache.kv_cache_dtype",
    "clients.0.name",
    "clients.0.path",
    "clients.0.nudge.kind",
    "clients.0.nudge.signal",
    "clients.0.nudge.pidfile",
]
_CLINE_SLOTS = [
    "cline.openAiBaseUrl",
    "cline.openAiApiKey",
    "cline.openAiModelId",
    "cline.cacheStrategy.mode",
    "cline.cacheStrategy.chunkSize",
    "cline.cacheStrategy.prefillEndpoint",
    "cline.requestOptions.maxTokens",
]
_CC_SLOTS = [
    "provider.base_url",
    "provider.api_key",
    "provider.model",
    "cache.mode",
    "cache.chunk_size",
    "cache.split.decode_base_url",
    "request.temperature",
    "cache.kv_cache_dtype",
]


def _toml_value(kind_value: tuple[str, object]) -> str:
    import json
    import math

    kind, value = kind_value
    if kind == "str":
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return repr(value)


def _set_toml(text: str, dotted: str, value: str) -> str:
    """``text`` with ``dotted`` set (tomlkit keeps the rest), or the line appended when the
    value does not fit (a table where a value was)."""
    import tomlkit

    doc = tomlkit.parse(text)
    parts = dotted.split(".")
    node = doc
    for part in parts[:-1]:
        key: object = int(part) if part.isdigit() else part
        try:
            node = node[key]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return text
    try:
        node[parts[-1]] = tomlkit.parse(f"v = {value}")["v"]  # type: ignore[index]
    except Exception:  # noqa: BLE001 - a value tomlkit cannot hold here: keep the text as it is
        return text
    return tomlkit.dumps(doc)


config_edits = st.lists(st.tuples(st.sampled_from(_CONFIG_SLOTS), _scalar), min_size=1, max_size=3)
client_edits = st.lists(st.tuples(st.sampled_from(_CLINE_SLOTS + _CC_SLOTS), _scalar), max_size=3)
config_commands = st.sampled_from(
    [
        ["status"],
        ["switch", "split"],
        ["switch", "merged", "--dry-run"],
        ["profile", "list"],
        ["profile", "show"],
        ["profile", "use", PROFILE],
        ["lint", "{config}"],
        ["lint", "--fix", "{cline}", "{ccswitch}"],
        ["client", "list"],
        ["key", "get", PROFILE],
        ["watch", "--once"],
        ["engine-flags"],
        ["doctor", "--skip", "nvidia-smi", "--timeout", "0.5"],
        ["probe", *_PROBE_BOUND],
        ["advise"],
    ]
)


@FUZZ
@given(edits=config_edits, client=client_edits, argv=config_commands)
@example(
    edits=[("profiles.{p}.base_url", ("str", "http://127.0.0.1:9/v1\x1b[31m"))],
    client=[],
    argv=["profile", "list"],
)
@example(edits=[("profiles.{p}.merged.chunk_size", ("num", 2**70))], client=[], argv=["switch", "split"])
@example(
    edits=[("profiles.{p}.request.temperature", ("num", float("nan")))],
    client=[],
    argv=["profile", "use", PROFILE],
)
@example(
    edits=[("clients.0.name", ("str", "\x1b]0;x\x07"))],
    client=[("cline.openAiApiKey", ("str", "sk-a\u200bbcdefghijklmnop"))],
    argv=["status"],
)
def test_hostile_config_values_get_clear_answers(
    sandbox_cli: Sandbox,
    edits: list[tuple[str, tuple[str, object]]],
    client: list[tuple[str, tuple[str, object]]],
    argv: list[str],
) -> None:
    import json

    from tests.clientenv import ccswitch_file, cline_file

    sandbox_cli.reset()
    path = config_file()
    text = path.read_text(encoding="utf-8")
    for slot, value in edits:
        text = _set_toml(text, slot.replace("{p}", PROFILE), _toml_value(value))
    path.write_bytes(text.encode("utf-8", "surrogateescape"))  # '\udcff' becomes a byte that is not UTF-8
    lines = cline_file().read_text(encoding="utf-8").splitlines()
    cline = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    cc_text = ccswitch_file().read_text(encoding="utf-8")
    for slot, (kind, value) in client:
        parts = slot.split(".")
        if parts[0] != "cline":
            cc_text = _set_toml(cc_text, slot, _toml_value((kind, value)))
        elif len(parts) == 2:
            cline[slot] = value
        elif isinstance(cline.get(".".join(parts[:2])), dict):
            cline[".".join(parts[:2])][parts[2]] = value
    with contextlib.suppress(ValueError, UnicodeEncodeError):  # a value JSON cannot hold: the file stays
        cline_file().write_text(json.dumps(cline, indent=2, allow_nan=True), encoding="utf-8")
    ccswitch_file().write_bytes(cc_text.encode("utf-8", "surrogateescape"))
    args = [a.format(config=path, cline=cline_file(), ccswitch=ccswitch_file()) for a in argv]
    assert_clear(args, cli(*args))
