"""``kvswitch doctor``: each known error of a merged/split setup (the source digest's S-24…S-28,
and S-08), reproduced against the deterministic test server, becomes a failing or warning check
with its fix and a link to where it is explained; a healthy setup passes; keys are never printed
and never go anywhere the profile does not name."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kvswitch.cli import main
from kvswitch.doctor import Check, DoctorSettings, Timing, assess_prefix_cache, run_doctor
from kvswitch.testing.sse_server import SSEServer

KEY = "sk-DOCTOR-0123456789abcdefXYZ"
OTHER_KEY = "sk-OTHERKEY-9876543210fedcba"
KEY_ENV = "KVS_DOCTOR_KEY"
UUID_A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
UUID_B = "GPU-bbbbbbbb-5555-6666-7777-888888888888"
KNOWN = "docs/background.md#known-errors"
NETWORK = ("reachable", "url-convention", "auth", "model", "split", "prefix-cache")
GPU = ("nvidia-smi", "same-gpu")


# -- servers ------------------------------------------------------------------------------


@dataclass
class RecordingServer(SSEServer):
    """An SSEServer that records every request's path and Authorization header."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    async def _route(
        self, method: str, target: str, headers: dict[str, str], body: bytes, writer: Any, received: float
    ) -> bool:
        self.seen.append((target, headers.get("authorization", "")))
        return await super()._route(method, target, headers, body, writer, received)


@dataclass
class StrictServer(SSEServer):
    """Answers only under ``/v1/`` (like vLLM): ``/v1/v1/…`` and bare ``/models`` are 404."""

    async def _route(
        self, method: str, target: str, headers: dict[str, str], body: bytes, writer: Any, received: float
    ) -> bool:
        path = target.split("?", 1)[0]
        if (
            "//" not in path
            and (path.startswith("/v1/v1/") or not path.startswith("/v1/"))
            and path.endswith(("/models", "/chat/completions"))
        ):
            await self._send(writer, 404, b'{"error": {"message": "not found"}}')
            return True
        return await super()._route(method, target, headers, body, writer, received)


@dataclass
class PrefixCacheServer(SSEServer):
    """A server with a toy prefix cache: TTFT grows with the words of the prompt it has not
    seen as a prefix before, so prompts that share more or less of a prefix swing (S-28)."""

    cache: bool = True
    base_ms: float = 30.0
    per_word_ms: float = 0.6
    prompts: list[list[str]] = field(default_factory=list)

    async def _stream(
        self, writer: Any, request: dict[str, Any], mode: str, scenario: str, received: float, request_id: str = ""
    ) -> None:
        words = str(request["messages"][-1]["content"]).split()
        hit = 0
        if self.cache:
            for old in self.prompts:
                n = 0
                while n < min(len(old), len(words)) and old[n] == words[n]:
                    n += 1
                hit = max(hit, n)
        self.prompts.append(words)
        self.ttft_ms = self.base_ms + self.per_word_ms * (len(words) - hit)
        await super()._stream(writer, request, mode, scenario, received, request_id)


@pytest.fixture
def server() -> Iterator[SSEServer]:
    with SSEServer(ttft_ms=80, itl_ms=1, tokens=2, api_key=KEY) as srv:
        yield srv


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


# -- helpers ------------------------------------------------------------------------------


def write_config(
    base_url: str,
    *,
    mode: str = "merged",
    convention: str = "includes-v1",
    model: str = "test-model",
    key: str = f"env:{KEY_ENV}",
    split: dict[str, str] | None = None,
    prefix_cache: bool = True,
    clients: Sequence[tuple[Path, str]] = (),
) -> Path:
    lines = [
        "version = 1",
        'active_profile = "lab"',
        f'mode = "{mode}"',
        "",
        "[profiles.lab]",
        f'base_url = "{base_url}"',
        f'url_convention = "{convention}"',
        f'model = "{model}"',
        f'key = "{key}"',
        "",
        "[profiles.lab.split]",
    ]
    lines += [f'{k} = "{v}"' for k, v in (split or {}).items()]
    lines += ["", "[profiles.lab.cache]", f"prefix_cache = {'true' if prefix_cache else 'false'}"]
    for path, kind in clients:
        lines += ["", "[[clients]]", f'path = "{path}"', f'kind = "{kind}"']
    path = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def ccswitch_client(
    tmp: Path,
    *,
    mode: str,
    base_url: str,
    chunk_size: int | None = None,
    prefill: str | None = None,
    decode: str | None = None,
) -> Path:
    lines = [
        "[provider]",
        'name = "lab"',
        f'base_url = "{base_url}"',
        'model = "test-model"',
        "",
        "[cache]",
        f'mode = "{mode}"',
    ]
    if chunk_size is not None:
        lines.append(f"chunk_size = {chunk_size}")
    if prefill or decode:
        lines += ["", "[cache.split]", f'prefill_base_url = "{prefill}"', f'decode_base_url = "{decode}"']
    path = tmp / "cc-switch" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def fake_smi(tmp: Path) -> Path:
    """A stand-in nvidia-smi: ``index, uuid, memory.used, memory.total`` lines, once, or in a
    loop every N ms with ``-lms N``; the UUID comes from $KVS_FAKE_UUID (set by the prefix)."""
    script = tmp / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys, time\n"
        "args = sys.argv[1:]\n"
        "lms = int(args[args.index('-lms') + 1]) if '-lms' in args else None\n"
        f"uuid = os.environ.get('KVS_FAKE_UUID', '{UUID_A}')\n"
        "while True:\n"
        "    print(f'0, {uuid}, 1000, 80000', flush=True)\n"
        "    if lms is None:\n"
        "        break\n"
        "    time.sleep(lms / 1000)\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Check], str]:
    """Run ``kvswitch doctor --format json``; returns (exit code, checks by name, all output)."""
    code = main(["doctor", "--format", "json", *args])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["command"] == "doctor" and report["ok"] is (code == 0)
    checks = {
        c["name"]: Check(c["name"], c["status"], c["saw"], c["fix"], c["source"]) for c in report["data"]["checks"]
    }
    return code, checks, captured.out + captured.err


def skip(*names: str) -> list[str]:
    return [a for n in names for a in ("--skip", n)]


def forms(key: str) -> set[str]:
    """A key raw, JSON-escaped, and every 8-character piece of it (a mask shows 3 + 4)."""
    return {key, json.dumps(key)[1:-1], *(key[i : i + 8] for i in range(len(key) - 7))}


def assert_no_key(text: str, *keys: str) -> None:
    leaked = sorted(f for k in keys for f in forms(k) if f in text)
    assert not leaked, leaked


# -- a healthy setup ----------------------------------------------------------------------


def test_everything_passes_and_exits_0(tmp_path: Path, keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with (
        SSEServer(ttft_ms=100, itl_ms=1, tokens=2, api_key=KEY) as router,
        SSEServer() as prefill,
        SSEServer() as decode,
    ):
        client = ccswitch_client(tmp_path, mode="split", base_url=router.url, prefill=prefill.url, decode=decode.url)
        write_config(
            router.url,
            mode="split",
            split={"prefill_base_url": prefill.url, "decode_base_url": decode.url},
            clients=[(client, "ccswitch")],
        )
        smi = fake_smi(tmp_path)
        code, checks, out = doctor(
            capsys,
            "--smi",
            str(smi),
            "--prefill-prefix",
            f"env KVS_FAKE_UUID={UUID_A}",
            "--decode-prefix",
            f"env KVS_FAKE_UUID={UUID_B}",
        )
    assert code == 0, out
    assert list(checks) == [
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
    ]
    assert checks.pop("key-variables").status == "skip"  # no registered client reads a key variable
    assert {c.name: c.status for c in checks.values()} == {name: "pass" for name in checks}, out
    assert "distinct and reachable" in checks["split"].saw
    assert UUID_A in checks["same-gpu"].saw and UUID_B in checks["same-gpu"].saw
    assert_no_key(out, KEY)


def test_text_output_lists_every_check(server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    write_config(server.url)
    code = main(["doctor", *skip(*GPU)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "kvswitch doctor · profile lab · mode merged" in out and "key sk-…fXYZ" in out
    assert "PASS  auth" in out and "PASS  model" in out and "skip  split" in out
    assert "skip  key-variables" in out
    assert out.rstrip().endswith("passed, 2 skipped")
    assert_no_key(out, KEY)


# -- 401 (S-24) from whitespace in the key, or a trailing slash ------------------------------------


@pytest.mark.parametrize("where", ["env", "keyring"])
def test_s24_key_with_whitespace_fails_auth_with_the_whitespace_hint(
    where: str,
    server: SSEServer,
    monkeypatch: pytest.MonkeyPatch,
    memory_keyring: dict[tuple[str, str], str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kvswitch.keys import service_name

    if where == "env":
        monkeypatch.setenv(KEY_ENV, KEY + " ")  # pasted with a trailing space
        write_config(server.url)
    else:
        memory_keyring[(service_name(), "lab")] = KEY + "\n"  # wrapped onto a new line
        write_config(server.url, key="keyring")
    code, checks, out = doctor(capsys, *skip(*GPU))
    assert code == 1
    auth = checks["auth"]
    assert auth.status == "fail"
    assert "whitespace or a line break" in auth.saw
    assert "with the whitespace removed from the key the server accepts the request" in auth.saw
    assert ("kvswitch key set lab" if where == "keyring" else f"fix ${KEY_ENV}") in auth.fix
    assert "status and quota" in auth.fix
    assert auth.source == KNOWN
    assert checks["model"].status == "skip"
    assert_no_key(out, KEY)


def test_s24_trailing_slash_fails_auth_with_the_slash_hint(
    server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(server.url + "/")
    code, checks, out = doctor(capsys, *skip(*GPU))
    assert code == 1
    auth = checks["auth"]
    assert auth.status == "fail"
    assert "ends with '/'" in auth.saw and "'//'" in auth.saw
    assert "with the trailing '/' removed the server accepts the request" in auth.saw
    assert f"kvswitch profile edit lab --base-url {server.url}" in auth.fix
    assert checks["config"].status == "warn" and "KVS201" in checks["config"].saw  # lint sees it too
    assert checks["url-convention"].status == "skip"
    assert_no_key(out, KEY)


def test_s29_a_wrong_key_fails_with_the_status_and_quota_hint(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, OTHER_KEY)
    write_config(server.url)
    code, checks, out = doctor(capsys, *skip(*GPU))
    assert code == 1
    assert checks["auth"].status == "fail" and "HTTP 401" in checks["auth"].saw
    assert "status and quota" in checks["auth"].fix and checks["auth"].source == KNOWN
    assert "whitespace" not in checks["auth"].saw and "'/'" not in checks["auth"].saw
    assert_no_key(out, KEY, OTHER_KEY)


# -- S-25: split with both endpoints on one address and no split deployment --------------------


def test_s25_split_on_one_address_stalls_and_fails(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with SSEServer(ttft_ms=20, itl_ms=1, tokens=2, api_key=KEY, split_capable=False) as srv:
        write_config(srv.url, mode="split", split={"prefill_base_url": srv.url, "decode_base_url": srv.url})
        code, checks, out = doctor(capsys, "--timeout", "1", *skip(*GPU, "prefix-cache"))
    assert code == 1
    assert_no_key(out, KEY)
    split = checks["split"]
    assert split.status == "fail"
    assert "same address" in split.saw and "stalled" in split.saw
    assert "split needs two real instance groups; with one instance use merged" in split.fix
    assert split.source == KNOWN
    assert checks["model"].status == "pass"  # a plain request is fine: only split hangs
    assert checks["config"].status == "warn" and "KVS111" in checks["config"].saw


def test_s25_same_address_that_answers_split_is_a_warning(
    server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(server.url, mode="split")
    code, checks, _ = doctor(capsys, *skip(*GPU, "prefix-cache"))
    assert code == 0
    assert checks["split"].status == "warn" and "same address" in checks["split"].saw
    assert "--prefill-base-url" in checks["split"].fix


def test_split_endpoint_that_is_down_fails(server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with SSEServer() as decode:
        down = "http://127.0.0.1:9/v1"
        write_config(server.url, mode="split", split={"prefill_base_url": down, "decode_base_url": decode.url})
        code, checks, _ = doctor(capsys, "--timeout", "1", *skip(*GPU, "prefix-cache"))
    assert code == 1
    assert checks["split"].status == "fail" and "prefill endpoint http://127.0.0.1:9/v1" in checks["split"].saw


# -- S-26: chunk_size changed in split mode --------------------------------------------------


def test_s26_chunk_size_in_split_mode_warns(
    tmp_path: Path, server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with SSEServer() as prefill, SSEServer() as decode:
        client = ccswitch_client(
            tmp_path, mode="split", base_url=server.url, chunk_size=768, prefill=prefill.url, decode=decode.url
        )
        write_config(server.url, clients=[(client, "ccswitch")])
        code, checks, _ = doctor(capsys, *skip(*NETWORK, *GPU))
    assert code == 0  # a warning, not a failure
    chunk = checks["chunk-size"]
    assert chunk.status == "warn" and chunk.source == "docs/background.md#chunk-size"
    assert "chunk_size is ignored in split mode" in chunk.saw and str(client) in chunk.saw
    assert "kvswitch switch merged" in chunk.fix
    assert checks["config"].status == "pass"  # the chunk finding is reported once, here


def test_s26_chunk_size_not_a_multiple_of_64_warns(
    tmp_path: Path, server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = ccswitch_client(tmp_path, mode="merged", base_url=server.url, chunk_size=500)
    write_config(server.url, clients=[(client, "ccswitch")])
    code, checks, _ = doctor(capsys, *skip(*NETWORK, *GPU))
    assert code == 0
    assert checks["chunk-size"].status == "warn" and "becomes 512" in checks["chunk-size"].saw
    assert "multiple of 64" in checks["chunk-size"].fix


# -- S-27: prefill and decode on the same GPU -------------------------------------------------


@pytest.mark.parametrize(("decode_uuid", "status"), [(UUID_A, "warn"), (UUID_B, "pass")])
def test_s27_same_gpu_through_two_command_prefixes(tmp_path: Path, decode_uuid: str, status: str) -> None:
    smi = fake_smi(tmp_path)
    write_config("http://127.0.0.1:9/v1", mode="split")
    report = run_doctor(
        DoctorSettings(
            smi=str(smi),
            prefill_prefix=["env", f"KVS_FAKE_UUID={UUID_A}"],
            decode_prefix=["env", f"KVS_FAKE_UUID={decode_uuid}"],
            skip=frozenset(NETWORK),
        )
    )
    same = report.get("same-gpu")
    assert same is not None and same.status == status, same
    assert report.get("nvidia-smi").status == "pass"  # type: ignore[union-attr]
    if status == "warn":
        assert UUID_A in same.saw and "only logically split" in same.saw and same.source == KNOWN
        assert "different GPUs" in same.fix and "merged" in same.fix
        assert report.exit_code == 0


def test_no_nvidia_smi_is_a_skip_with_the_reason(tmp_path: Path) -> None:
    write_config("http://127.0.0.1:9/v1", mode="split")
    report = run_doctor(DoctorSettings(smi=str(tmp_path / "no-such-smi"), skip=frozenset(NETWORK)))
    smi, same = report.get("nvidia-smi"), report.get("same-gpu")
    assert smi is not None and smi.status == "skip" and "not on this machine's PATH" in smi.saw
    assert "--prefill-prefix" in smi.fix
    assert same is not None and same.status == "skip"
    assert report.exit_code == 0


def test_a_prefix_that_cannot_run_nvidia_smi_warns(tmp_path: Path) -> None:
    smi = fake_smi(tmp_path)
    write_config("http://127.0.0.1:9/v1", mode="split")
    report = run_doctor(
        DoctorSettings(
            smi=str(smi),
            prefill_prefix=["env", f"KVS_FAKE_UUID={UUID_A}"],
            decode_prefix=["false"],
            skip=frozenset(NETWORK),
            gpu_seconds=1.0,
        )
    )
    smi_check = report.get("nvidia-smi")
    assert smi_check is not None and smi_check.status == "warn" and "none from decode via false" in smi_check.saw
    assert report.get("same-gpu").status == "skip"  # type: ignore[union-attr]


# -- S-28: TTFT swings with the prefix cache on and prompts that differ -----------------------------


def test_s28_prefix_cache_swings_warn_against_a_live_server(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with PrefixCacheServer(itl_ms=1, tokens=2, api_key=KEY) as srv:
        write_config(srv.url)
        code, checks, _ = doctor(capsys, *skip(*GPU))
    assert code == 0
    prefix = checks["prefix-cache"]
    assert prefix.status == "warn" and prefix.source == "docs/background.md#measuring"
    assert "TTFT swings" in prefix.saw
    assert "fix the prompt or turn the prefix cache off for comparisons" in prefix.fix
    assert "kvswitch profile edit lab --prefix-cache false" in prefix.fix


def test_s28_no_prefix_cache_no_swings(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with PrefixCacheServer(itl_ms=1, tokens=2, api_key=KEY, cache=False, base_ms=40, per_word_ms=0.05) as srv:
        write_config(srv.url)
        code, checks, _ = doctor(capsys, *skip(*GPU))
    assert code == 0
    assert checks["prefix-cache"].status == "pass", checks["prefix-cache"]


def _t(*values: float, cached: list[int | None] | None = None) -> list[Timing]:
    cached = cached or [None] * len(values)
    return [Timing(v, c) for v, c in zip(values, cached, strict=True)]


@pytest.mark.parametrize(
    ("varying", "fixed", "prefix_cache", "status", "words"),
    [
        # recorded on a prefix-caching server: TTFT follows each prompt's hit rate
        (
            _t(240, 150, 60, cached=[0, 192, 368]),
            _t(240, 30, 31, 30, cached=[0, 400, 400, 400]),
            True,
            "warn",
            "fix the prompt or turn the prefix cache off",
        ),
        # the same swings although the profile turned the cache off: the server still caches
        (_t(240, 150, 60), _t(240, 30, 31, 30), False, "warn", "turn it off on the server too"),
        # steady: unique prompts all miss, repeats all hit
        (_t(240, 236, 244, cached=[0, 0, 0]), _t(240, 30, 31, 30, cached=[0, 400, 400, 400]), True, "pass", "spread"),
        # everything swings: load or network, not the prefix cache
        (_t(100, 300, 180), _t(100, 40, 250, 120), True, "warn", "not the prefix cache"),
        # tiny absolute differences are noise, whatever the ratio
        (_t(4, 9, 6), _t(5, 5, 5, 5), True, "pass", "spread"),
        # too few answers
        (_t(100), _t(100, 30, 30), True, "skip", "too few"),
    ],
)
def test_s28_assess_recorded_timings(
    varying: list[Timing], fixed: list[Timing], prefix_cache: bool, status: str, words: str
) -> None:
    check = assess_prefix_cache(varying, fixed, prefix_cache, "lab")
    assert check.status == status, check
    assert words in check.saw + check.fix


# -- S-08: a model name the server does not list ---------------------------------------------


def test_s08_unknown_model_fails_naming_the_servers_models(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with SSEServer(ttft_ms=20, itl_ms=1, tokens=2, api_key=KEY, model="qwen2.5-coder-7b-instruct") as srv:
        write_config(srv.url, model="qwen2.5-coder-7b")
        code, checks, _ = doctor(capsys, *skip(*GPU))
    assert code == 1
    model = checks["model"]
    assert model.status == "fail" and model.source == KNOWN
    assert "HTTP 404" in model.saw and "'qwen2.5-coder-7b' is not in the server's model list" in model.saw
    assert "similar ids: qwen2.5-coder-7b-instruct" in model.saw
    assert "kvswitch profile edit lab --model ID" in model.fix
    assert checks["auth"].status == "pass"  # a 404 for the model is not an auth problem
    assert checks["prefix-cache"].status == "skip"


# -- URL convention and reachability ---------------------------------------------------------


def test_url_convention_mismatch_warns_with_the_edit_command(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with StrictServer(ttft_ms=20, itl_ms=1, tokens=2, api_key=KEY) as srv:
        write_config(srv.url, convention="append-v1")  # would call …/v1/v1/chat/completions
        code, checks, _ = doctor(capsys, *skip(*GPU, "prefix-cache"))
    assert code == 0
    conv = checks["url-convention"]
    assert conv.status == "warn"
    assert "/v1/models lists models" in conv.saw and "the profile says append-v1" in conv.saw
    assert conv.fix == "kvswitch profile edit lab --url-convention includes-v1"
    assert checks["model"].status == "pass"  # later checks use the convention that works


def test_url_convention_agrees(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with StrictServer(ttft_ms=20, itl_ms=1, tokens=2, api_key=KEY) as srv:
        write_config(srv.root, convention="append-v1")  # a gateway-style base: /v1/… is appended
        code, checks, _ = doctor(capsys, *skip(*GPU, "prefix-cache"))
    assert code == 0
    assert checks["url-convention"].status == "pass" and "they agree" in checks["url-convention"].saw


def test_unreachable_base_url_fails_fast(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    write_config("http://127.0.0.1:9/v1")
    t0 = time.monotonic()
    code, checks, _ = doctor(capsys, "--timeout", "1", *skip(*GPU))
    assert time.monotonic() - t0 < 10
    assert code == 1
    assert checks["reachable"].status == "fail" and "cannot connect" in checks["reachable"].saw
    assert "kvswitch profile edit lab --base-url" in checks["reachable"].fix
    assert all(checks[n].status == "skip" for n in ("auth", "model", "prefix-cache"))


def test_not_set_up_fails_with_init_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, checks, _ = doctor(capsys, *skip(*GPU))
    assert code == 1
    assert checks["config"].status == "fail" and "kvswitch init" in checks["config"].fix


def test_a_config_error_fails_the_config_check(
    server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(server.url)
    path.write_text(path.read_text().replace('mode = "merged"', 'mode = "both"'))
    code, checks, _ = doctor(capsys, *skip(*GPU))
    assert code == 1
    assert checks["config"].status == "fail" and "KVS002" in checks["config"].saw
    assert checks["auth"].status == "skip"


def test_unknown_profile(server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    write_config(server.url)
    code, checks, _ = doctor(capsys, "--profile", "nope", *skip(*GPU))
    assert code == 1
    assert checks["config"].status == "fail" and "no profile 'nope'" in checks["config"].saw


def test_usage_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KVS_UNSET_KEY", raising=False)
    assert main(["doctor", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert main(["doctor", "--skip", "bogus"]) == 2
    assert main(["doctor", "--model", "m"]) == 2
    assert (
        main(["doctor", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "KVS_UNSET_KEY"]) == 2
    )
    assert main(["doctor", "--format", "yaml"]) == 2
    capsys.readouterr()
    assert main(["doctor", "--help"]) == 0
    shown = capsys.readouterr().out
    assert "docs/background.md#known-errors" in shown and "HTTPS_PROXY" in shown


# -- keys: never printed, never sent where the profile does not point --------------------------


def test_keys_are_never_printed(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for value, base in ((KEY, server.url), (KEY + " ", server.url), (KEY + "\n", server.url), (KEY, server.url + "/")):
        monkeypatch.setenv(KEY_ENV, value)
        write_config(base, mode="split")
        for fmt in ("text", "json"):
            main(["doctor", "--format", fmt, "--timeout", "1.5", *skip(*GPU, "prefix-cache")])
            captured = capsys.readouterr()
            outputs.append(captured.out + captured.err)
    text = "\n".join(outputs)
    assert "sk-…fXYZ" in text  # the mask is what shows
    assert_no_key(text, KEY)


def test_the_key_goes_only_to_the_profiles_hosts(
    tmp_path: Path, server: SSEServer, keyed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with RecordingServer(ttft_ms=20, itl_ms=1, tokens=2) as stranger:
        # a registered client file that points somewhere else: doctor lints it, never calls it
        cline = tmp_path / "settings.json"
        cline.write_text(
            json.dumps(
                {
                    "cline.apiProvider": "openai-compatible",
                    "cline.openAiBaseUrl": stranger.url,
                    "cline.openAiModelId": "test-model",
                    "cline.cacheStrategy": {
                        "mode": "split",
                        "prefillEndpoint": stranger.url,
                        "decodeEndpoint": stranger.url,
                        "kvTransferProtocol": "layer-wise",
                        "enablePrefixCache": True,
                    },
                }
            )
        )
        write_config(server.url, mode="split", clients=[(cline, "cline")])
        code, checks, _ = doctor(capsys, *skip(*GPU))
        assert checks["auth"].status == "pass"
        assert stranger.seen == []
        # --base-url without --api-key-env: the profile's key stays home
        code, checks, _ = doctor(capsys, "--base-url", stranger.url, "--model", "test-model", *skip(*GPU))
        assert code == 0 and checks["auth"].status == "pass"
        assert "without a key" in checks["auth"].saw
        assert stranger.seen and all(auth == "" for _, auth in stranger.seen)
        # --base-url with --api-key-env: that key, and only there
        stranger.seen.clear()
        os.environ["KVS_OTHER_KEY"] = OTHER_KEY
        try:
            code, checks, out = doctor(
                capsys,
                "--base-url",
                stranger.url,
                "--model",
                "test-model",
                "--api-key-env",
                "KVS_OTHER_KEY",
                *skip(*GPU),
            )
        finally:
            del os.environ["KVS_OTHER_KEY"]
        assert code == 0
        assert {auth for _, auth in stranger.seen} == {"", f"Bearer {OTHER_KEY}"}  # "": the reachability GET
        assert_no_key(out, KEY, OTHER_KEY)


def test_split_probe_url_gets_the_key_but_nothing_else_does(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with (
        RecordingServer(api_key=KEY, ttft_ms=20, itl_ms=1, tokens=2) as base,
        RecordingServer(api_key=KEY, ttft_ms=20, itl_ms=1, tokens=2) as router,
        RecordingServer() as prefill,
        RecordingServer() as decode,
    ):
        write_config(
            base.url,
            mode="split",
            split={"prefill_base_url": prefill.url, "decode_base_url": decode.url, "probe_url": router.url},
        )
        code, checks, _ = doctor(capsys, *skip(*GPU, "prefix-cache"))
    assert code == 0 and checks["split"].status == "pass", checks["split"]
    assert any(auth == f"Bearer {KEY}" for _, auth in router.seen)  # the split request went to the router
    assert [auth for _, auth in prefill.seen + decode.seen] == ["", ""]  # reachability only, without the key


def test_s27_both_instances_on_this_one_gpu_machine_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(tmp_path)  # "nvidia-smi" on PATH, one GPU
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("kvswitch.doctor.gpu._nvml_present", lambda: False)
    write_config(
        "http://127.0.0.1:9/v1",
        mode="split",
        split={"prefill_base_url": "http://127.0.0.1:8001/v1", "decode_base_url": "http://localhost:8002/v1"},
    )
    report = run_doctor(DoctorSettings(skip=frozenset(NETWORK)))
    same = report.get("same-gpu")
    assert report.get("nvidia-smi").status == "pass"  # type: ignore[union-attr]
    assert same is not None and same.status == "warn" and "which has one GPU" in same.saw and UUID_A in same.saw
    write_config("http://127.0.0.1:9/v1", mode="merged")
    assert run_doctor(DoctorSettings(skip=frozenset(NETWORK))).get("same-gpu").status == "skip"  # type: ignore[union-attr]


def test_a_server_without_a_model_list(keyed: str, capsys: pytest.CaptureFixture[str]) -> None:
    @dataclass
    class NoList(SSEServer):
        async def _route(
            self, method: str, target: str, headers: dict[str, str], body: bytes, writer: Any, received: float
        ) -> bool:
            if target.endswith("/models"):
                await self._send(writer, 404, b'{"error": {"message": "no route"}}')
                return True
            return await super()._route(method, target, headers, body, writer, received)

    with NoList(ttft_ms=20, itl_ms=1, tokens=2, api_key=KEY, model="served") as srv:
        write_config(srv.url)
        code, checks, _ = doctor(capsys, *skip(*GPU, "prefix-cache"))
        assert code == 1
        assert checks["url-convention"].status == "skip"
        assert checks["auth"].status == "pass"  # the chat request got past auth
        assert checks["model"].status == "fail" and "no model list" in checks["model"].saw
        write_config(srv.url, model="served")
        code, checks, _ = doctor(capsys, *skip(*GPU, "prefix-cache"))
        assert code == 0 and checks["model"].status == "pass" and "no model list" in checks["model"].saw


def test_library_report_as_dict_has_no_key(server: SSEServer, keyed: str) -> None:
    write_config(server.url)
    report = run_doctor(DoctorSettings(skip=frozenset(GPU)))
    data = json.dumps(report.as_dict())
    assert report.exit_code == 0 and report.target is not None and report.target.key == KEY
    assert_no_key(data, KEY)
    assert "key=" not in repr(report.target)
