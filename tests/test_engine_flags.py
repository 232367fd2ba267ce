"""``kvswitch engine-flags`` and ``kvswitch.engine_flags``: the server commands that match a
profile, table-driven over profiles × engines × modes; refusals; the JSON shape; the CLI's exit
codes; the generated part of docs/engines.md."""

from __future__ import annotations

import itertools
import json
import shlex
from dataclasses import dataclass
from typing import Any

import pytest

from kvswitch.engine_flags import (
    CAVEATS,
    DTYPES,
    ROUTER_SPECS,
    Command,
    EngineFlags,
    engine_flags,
    engines_reference,
)
from kvswitch.models import Profile
from tests.clientenv import cli, init
from tests.conftest import ROOT

P_URL = "http://127.0.0.1:8100/v1"
D_URL = "http://127.0.0.1:8200/v1"
ROUTER_URL = "http://127.0.0.1:8000/v1"


@dataclass(frozen=True)
class Case:
    chunk: int
    prefix: bool
    dtype: str
    protocol: str
    concurrency: int

    def profile(self) -> Profile:
        return Profile.model_validate(
            {
                "base_url": ROUTER_URL,
                "model": "Qwen/Qwen2.5-7B-Instruct",
                "merged": {"chunk_size": self.chunk},
                "split": {
                    "prefill_base_url": P_URL,
                    "decode_base_url": D_URL,
                    "transfer_protocol": self.protocol,
                    "max_transfer_concurrency": self.concurrency,
                },
                "cache": {"kv_cache_dtype": self.dtype, "prefix_cache": self.prefix},
            }
        )

    def __str__(self) -> str:
        return f"chunk{self.chunk}-{'pc' if self.prefix else 'nopc'}-{self.dtype}-{self.protocol}-c{self.concurrency}"


CASES = [
    Case(chunk, prefix, dtype, protocol, concurrency)
    for chunk, prefix, dtype, (protocol, concurrency) in itertools.product(
        (512, 100, 2048),
        (True, False),
        ("auto", "fp8", "int8"),
        (("layer-wise", 4), ("request-wise", 8)),
    )
]
ENGINES = ("vllm", "sglang")
MODES = ("merged", "split")
# what --kv-cache-dtype must carry, per engine (None: refused)
EXPECTED_DTYPE = {
    ("vllm", "auto"): "auto",
    ("vllm", "fp8"): "fp8",
    ("vllm", "int8"): None,
    ("sglang", "auto"): "auto",
    ("sglang", "fp8"): "fp8_e4m3",
    ("sglang", "int8"): None,
}


def value(cmd: Command, flag: str) -> list[str] | None:
    """The values of ``flag`` in ``cmd``, None when absent."""
    for f in cmd.flags:
        if f.name == flag:
            return list(f.values)
    return None


def has(cmd: Command, flag: str) -> bool:
    return value(cmd, flag) is not None


def env(cmd: Command) -> dict[str, str]:
    return {e.name: e.value for e in cmd.env}


def roles(result: EngineFlags) -> dict[str, Command]:
    return {c.role: c for c in result.commands}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_flags_carry_the_profile(case: Case, engine: str, mode: str) -> None:
    result = engine_flags(case.profile(), engine, mode, profile_name="lab")  # type: ignore[arg-type]
    by_role = roles(result)
    codes = {c.code for c in result.caveats}
    expected_dtype = EXPECTED_DTYPE[(engine, case.dtype)]

    # every caveat a flag points to exists, numbered 1…n, refusals first
    assert [c.n for c in result.caveats] == list(range(1, len(result.caveats) + 1))
    levels = [c.level for c in result.caveats]
    assert levels == sorted(levels, key=["refused", "warning", "note"].index)
    for cmd in result.commands:
        assert set(cmd.codes()) <= codes
        assert shlex.split(cmd.shell().split(" ", len(cmd.env))[-1]) == cmd.argv

    # dtype: the same value on every engine instance, or refused and left out
    servers = [c for c in result.commands if c.role != "router"]
    if expected_dtype is None:
        assert not result.ok
        assert all(not has(c, "--kv-cache-dtype") for c in result.commands)
        refusal = result.refused[0]
        assert refusal.level == "refused" and "int8" in refusal.text and "fp8" in refusal.text
        assert "kvswitch profile edit lab --kv-cache-dtype fp8" in refusal.text
    else:
        assert result.ok
        assert all(value(c, "--kv-cache-dtype") == [expected_dtype] for c in servers)

    if mode == "merged":
        assert list(by_role) == ["merged"]
        cmd = by_role["merged"]
        assert cmd.url == ROUTER_URL and value(cmd, "--port") == ["8000"]
        if engine == "vllm":
            assert cmd.argv[:3] == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]
            assert has(cmd, "--enable-chunked-prefill")
            assert value(cmd, "--max-num-batched-tokens") == [str(case.chunk)]
            seqs = value(cmd, "--max-num-seqs")
            if case.chunk < 1024:
                assert seqs is not None and int(seqs[0]) <= case.chunk  # vLLM: budget ≥ max_num_seqs
            else:
                assert seqs is None
            assert has(cmd, "--enable-prefix-caching") == case.prefix
            assert has(cmd, "--no-enable-prefix-caching") == (not case.prefix)
        else:
            assert cmd.argv[:5] == ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-7B-Instruct"]
            assert value(cmd, "--chunked-prefill-size") == [str(case.chunk)]
            assert has(cmd, "--disable-radix-cache") == (not case.prefix)
        assert ("chunk-small" in codes) == (case.chunk < 256)
        assert ("chunk-64" in codes) == (case.chunk % 64 != 0)
        return

    # split: prefill, decode, router
    assert list(by_role) == ["prefill", "decode", "router"]
    p, d, r = by_role["prefill"], by_role["decode"], by_role["router"]
    assert (p.url, d.url, r.url) == (P_URL, D_URL, ROUTER_URL)
    assert (value(p, "--port"), value(d, "--port"), value(r, "--port")) == (["8100"], ["8200"], ["8000"])
    assert "chunk-split" in codes
    assert not any(has(c, f) for c in servers for f in ("--max-num-batched-tokens", "--chunked-prefill-size"))
    layer = case.protocol == "layer-wise"
    if engine == "vllm":
        pconf = json.loads(value(p, "--kv-transfer-config")[0])  # type: ignore[index]
        dconf = json.loads(value(d, "--kv-transfer-config")[0])  # type: ignore[index]
        assert pconf == dconf == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert env(p)["VLLM_NIXL_SIDE_CHANNEL_PORT"] != env(d)["VLLM_NIXL_SIDE_CHANNEL_PORT"]
        assert (env(p)["CUDA_VISIBLE_DEVICES"], env(d)["CUDA_VISIBLE_DEVICES"]) == ("0", "1")
        assert ("vllm-layerwise" in codes) == layer
        assert "vllm-nixl-concurrency" in codes
        assert r.argv[:2] == ["python", "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py"]
        assert value(r, "--prefiller-ports") == ["8100"] and value(r, "--decoder-ports") == ["8200"]
        for c in servers:
            assert has(c, "--enable-prefix-caching") == case.prefix
    else:
        assert value(p, "--disaggregation-mode") == ["prefill"]
        assert value(d, "--disaggregation-mode") == ["decode"]
        assert (
            value(p, "--disaggregation-transfer-backend")
            == value(d, "--disaggregation-transfer-backend")
            == ["mooncake"]
        )
        assert value(p, "--disaggregation-bootstrap-port") == ["8998"]
        assert has(p, "--enable-disagg-layer-pipeline") == has(d, "--enable-disagg-layer-pipeline") == layer
        assert env(p)["SGLANG_DISAGGREGATION_QUEUE_SIZE"] == str(case.concurrency)
        assert env(p).get("SGLANG_DISAGGREGATION_THREAD_POOL_SIZE") == (
            str(case.concurrency) if case.concurrency > 4 else None
        )
        assert value(d, "--base-gpu-id") == ["1"]
        assert has(p, "--disable-radix-cache") == (not case.prefix)
        assert has(d, "--disaggregation-decode-enable-radix-cache") == case.prefix
        assert r.argv[:3] == ["python", "-m", "sglang_router.launch_router"]
        assert has(r, "--pd-disaggregation")
        assert value(r, "--host") == value(r, "--prometheus-host") == ["127.0.0.1"]
        assert value(r, "--prometheus-port") == ["29000"] and value(r, "--policy") == ["cache_aware"]
        assert value(r, "--prefill") == ["http://127.0.0.1:8100", "8998"]
        assert value(r, "--decode") == ["http://127.0.0.1:8200"]
    if expected_dtype is not None:
        assert "split-same-dtype" in codes


@pytest.mark.parametrize("dtype", [*sorted(DTYPES), "fp32", "q8_0", "nonsense"])
@pytest.mark.parametrize("engine", ENGINES)
def test_every_dtype_is_passed_or_refused(dtype: str, engine: str) -> None:
    case = Case(512, True, dtype, "request-wise", 4)
    result = engine_flags(case.profile(), engine, "merged")  # type: ignore[arg-type]
    rule = DTYPES.get(dtype, {}).get(engine)  # type: ignore[call-overload]
    cmd = result.commands[0]
    if rule is None or rule.value is None:
        assert not result.ok and not has(cmd, "--kv-cache-dtype")
        assert result.refused[0].flags == ("--kv-cache-dtype",)
    else:
        assert result.ok and value(cmd, "--kv-cache-dtype") == [rule.value]


def test_no_plain_int8_and_no_sglang_fp16() -> None:
    """The reference: no plain int8 KV in vLLM or SGLang; SGLang has no fp16 value."""
    assert DTYPES["int8"]["vllm"].value is None and DTYPES["int8"]["sglang"].value is None
    assert DTYPES["fp16"]["sglang"].value is None
    assert DTYPES["fp8"]["sglang"].value == "fp8_e4m3"


def test_sglang_layer_wise_with_nixl_is_refused() -> None:
    profile = Case(512, True, "auto", "layer-wise", 4).profile()
    result = engine_flags(profile, "sglang", "split", transfer_backend="nixl", profile_name="lab")
    assert not result.ok
    assert [c.code for c in result.refused] == ["sglang-lp-nixl"]
    assert "request-wise" in result.refused[0].text and "mooncake" in result.refused[0].text
    assert not any(has(c, "--enable-disagg-layer-pipeline") for c in result.commands)
    assert all(value(c, "--disaggregation-transfer-backend") == ["nixl"] for c in result.commands[:2])
    ok = engine_flags(Case(512, True, "auto", "request-wise", 4).profile(), "sglang", "split", transfer_backend="nixl")
    assert ok.ok


def test_vllm_mooncake_roles_workers_and_bootstrap_port() -> None:
    profile = Case(512, True, "fp8", "request-wise", 6).profile()
    result = engine_flags(profile, "vllm", "split", transfer_backend="mooncake")
    p, d, _ = result.commands
    assert json.loads(value(p, "--kv-transfer-config")[0]) == {  # type: ignore[index]
        "kv_connector": "MooncakeConnector",
        "kv_role": "kv_producer",
        "kv_connector_extra_config": {"num_workers": 6},
    }
    assert json.loads(value(d, "--kv-transfer-config")[0]) == {  # type: ignore[index]
        "kv_connector": "MooncakeConnector",
        "kv_role": "kv_consumer",
    }
    assert env(p)["VLLM_MOONCAKE_BOOTSTRAP_PORT"] == "8998"
    assert "VLLM_MOONCAKE_BOOTSTRAP_PORT" not in env(d)
    assert "8998" in next(c.text for c in result.caveats if c.code == "vllm-mooncake-port")


def test_one_address_for_everything_gets_distinct_ports_and_says_how_to_fix_it() -> None:
    profile = Profile(base_url="http://127.0.0.1:8000/v1", model="m")  # endpoints default to base_url
    for engine, (pp, dp) in (("vllm", ("8100", "8200")), ("sglang", ("30000", "30001"))):
        result = engine_flags(profile, engine, "split", profile_name="lab")  # type: ignore[arg-type]
        p, d, r = result.commands
        assert (value(p, "--port"), value(d, "--port"), value(r, "--port")) == ([pp], [dp], ["8000"])
        moved = next(c for c in result.caveats if c.code == "port-moved")
        assert moved.level == "warning"
        assert f"kvswitch profile edit lab --prefill-base-url http://127.0.0.1:{pp}/v1" in moved.text
        assert f"--decode-base-url http://127.0.0.1:{dp}/v1" in moved.text


def test_side_ports_never_take_an_http_port() -> None:
    profile = Profile.model_validate(
        {
            "base_url": "http://127.0.0.1:8000/v1",
            "model": "m",
            "split": {"prefill_base_url": "http://127.0.0.1:8998", "decode_base_url": "http://127.0.0.1:5600"},
        }
    )
    sglang = engine_flags(profile, "sglang", "split")
    assert value(sglang.commands[0], "--disaggregation-bootstrap-port") == ["8999"]
    assert value(sglang.commands[2], "--prefill") == ["http://127.0.0.1:8998", "8999"]
    vllm = engine_flags(profile, "vllm", "split")
    ports = {env(c)["VLLM_NIXL_SIDE_CHANNEL_PORT"] for c in vllm.commands[:2]}
    assert ports == {"5601", "5602"}
    assert {c.code for c in vllm.caveats} >= {"side-port-moved"}


def test_two_hosts_no_gpu_placement_and_listen_on_all() -> None:
    profile = Profile.model_validate(
        {
            "base_url": "http://10.0.0.10:8000/v1",
            "model": "m",
            "split": {"prefill_base_url": "http://10.0.0.11:8100", "decode_base_url": "http://10.0.0.12:8200"},
        }
    )
    result = engine_flags(profile, "vllm", "split")
    p, d, r = result.commands
    assert "CUDA_VISIBLE_DEVICES" not in env(p) and "CUDA_VISIBLE_DEVICES" not in env(d)
    assert env(p)["VLLM_NIXL_SIDE_CHANNEL_PORT"] == env(d)["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"
    assert value(p, "--host") == ["0.0.0.0"]
    assert value(r, "--prefiller-hosts") == ["10.0.0.11"] and value(r, "--decoder-hosts") == ["10.0.0.12"]
    assert "listen-all" in {c.code for c in result.caveats}
    assert "same-host-gpus" not in {c.code for c in result.caveats}


@pytest.mark.parametrize(
    ("engine", "flag"), [("vllm", "--gpu-memory-utilization"), ("sglang", "--mem-fraction-static")]
)
def test_shared_gpu_fractions_sum_below_095(engine: str, flag: str) -> None:
    profile = Case(512, True, "auto", "request-wise", 4).profile()
    result = engine_flags(profile, engine, "split", shared_gpu=True)  # type: ignore[arg-type]
    p, d, _ = result.commands
    total = float(value(p, flag)[0]) + float(value(d, flag)[0])  # type: ignore[index]
    assert total < 0.95
    assert "only a logical split: memory will not drop" in " ".join(c.text for c in result.caveats)
    assert not has(d, "--base-gpu-id") and "CUDA_VISIBLE_DEVICES" not in env(p)


def test_hosted_gateway_and_missing_port_are_said() -> None:
    profile = Profile(base_url="https://taotoken.net/api", model="gpt-4o-mini", url_convention="append-v1")
    result = engine_flags(profile, "vllm", "merged")
    codes = {c.code for c in result.caveats}
    assert {"hosted", "default-port", "listen-all"} <= codes
    assert value(result.commands[0], "--port") == ["8000"]


def test_json_shape() -> None:
    result = engine_flags(Case(500, False, "int8", "layer-wise", 4).profile(), "sglang", "split", profile_name="lab")
    data = json.loads(json.dumps(result.as_dict()))
    assert set(data) == {
        "kvswitch_engine_flags",
        "engine",
        "mode",
        "profile",
        "model",
        "transfer_backend",
        "router",
        "router_mode",
        "ok",
        "commands",
        "caveats",
    }
    assert (data["engine"], data["mode"], data["profile"], data["ok"]) == ("sglang", "split", "lab", False)
    assert (data["router"], data["router_mode"]) == ("sglang", "pd")
    assert [c["role"] for c in data["commands"]] == ["prefill", "decode", "router"]
    numbers = {c["n"] for c in data["caveats"]}
    for cmd in data["commands"]:
        assert set(cmd) == {"role", "url", "program", "env", "env_caveats", "flags", "argv", "shell", "caveats"}
        assert cmd["argv"][: len(cmd["program"])] == cmd["program"]
        for flag in cmd["flags"]:
            assert set(flag) == {"flag", "values", "caveats"} and set(flag["caveats"]) <= numbers
        assert set(cmd["caveats"]) <= numbers
    for caveat in data["caveats"]:
        assert set(caveat) == {"n", "code", "level", "flags", "text", "versions", "source"}
        assert caveat["level"] in ("refused", "warning", "note") and caveat["source"]
    assert data["caveats"][0]["level"] == "refused"


def test_every_catalogue_caveat_names_a_source_and_flags_it_attaches_to() -> None:
    for spec in CAVEATS.values():
        assert spec.source and spec.text.strip()
        assert spec.level in ("refused", "warning", "note")


def test_bad_engine_or_mode_is_a_value_error() -> None:
    profile = Profile(base_url=ROUTER_URL, model="m")
    with pytest.raises(ValueError, match="engine"):
        engine_flags(profile, "tgi", "merged")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        engine_flags(profile, "vllm", "both")


# -- routers in front of the split side ----------------------------------------------------
PD_PROFILE = Case(512, True, "auto", "request-wise", 4)


def test_sglang_router_regular_mode_fronts_two_whole_instances() -> None:
    result = engine_flags(
        PD_PROFILE.profile(), "sglang", "split", router="sglang", router_mode="regular", policy="round_robin"
    )
    assert [c.role for c in result.commands] == ["worker", "worker", "router"]
    assert (result.router, result.router_mode, result.transfer_backend) == ("sglang", "regular", None)
    first, second, r = result.commands
    for worker in (first, second):
        assert value(worker, "--chunked-prefill-size") == ["512"]
        assert not any(f.name.startswith("--disaggregation") for f in worker.flags)
        assert "SGLANG_DISAGGREGATION_QUEUE_SIZE" not in env(worker)
    assert value(second, "--base-gpu-id") == ["1"] and not has(first, "--base-gpu-id")
    assert r.argv[:3] == ["python", "-m", "sglang_router.launch_router"]
    assert value(r, "--worker-urls") == ["http://127.0.0.1:8100", "http://127.0.0.1:8200"]
    assert not has(r, "--pd-disaggregation") and not has(r, "--prefill")
    assert value(r, "--policy") == ["round_robin"]
    codes = {c.code for c in result.caveats}
    assert {"router-regular", "router-policy", "router-metrics", "sglang-router"} <= codes
    assert not codes & {"chunk-split", "split-no-throughput", "split-same-dtype", "sglang-router-pd"}
    same_host = next(c.text for c in result.caveats if c.code == "same-host-gpus")
    assert same_host.startswith("The two workers run on one host") and "the second worker" in same_host


def test_regular_mode_defaults_to_the_engines_own_router() -> None:
    result = engine_flags(PD_PROFILE.profile(), "vllm", "split", router_mode="regular")
    r = result.commands[2]
    assert result.router == "vllm" and r.argv[0] == "vllm-router"
    assert value(r, "--worker-urls") == ["http://127.0.0.1:8100", "http://127.0.0.1:8200"]
    assert (env(result.commands[0])["CUDA_VISIBLE_DEVICES"], env(result.commands[1])["CUDA_VISIBLE_DEVICES"]) == (
        "0",
        "1",
    )
    assert not any(has(c, "--kv-transfer-config") for c in result.commands)


@pytest.mark.parametrize(
    ("backend", "prefill", "connector"),
    [
        ("nixl", ["http://127.0.0.1:8100"], None),
        ("mooncake", ["http://127.0.0.1:8100", "8998"], ["mooncake"]),
    ],
)
def test_vllm_router_pd_mode(backend: str, prefill: list[str], connector: list[str] | None) -> None:
    result = engine_flags(PD_PROFILE.profile(), "vllm", "split", router="vllm", transfer_backend=backend)  # type: ignore[arg-type]
    p, d, r = result.commands
    assert r.argv[:1] == ["vllm-router"] and has(r, "--vllm-pd-disaggregation")
    assert value(r, "--prefill") == prefill and value(r, "--decode") == ["http://127.0.0.1:8200"]
    assert value(r, "--kv-connector") == connector
    assert value(r, "--host") == value(r, "--prometheus-host") == ["127.0.0.1"]
    assert has(p, "--kv-transfer-config") and has(d, "--kv-transfer-config")
    assert {"vllm-router", "vllm-router-pd"} <= {c.code for c in result.caveats}
    assert (result.router, result.router_mode, result.transfer_backend) == ("vllm", "pd", backend)


def test_default_routers_stay_the_engines_usual_ones() -> None:
    vllm = engine_flags(PD_PROFILE.profile(), "vllm", "split")
    assert vllm.router == "proxy" and vllm.commands[2].argv[1].endswith("toy_proxy_server.py")
    sglang = engine_flags(PD_PROFILE.profile(), "sglang", "split")
    assert sglang.router == "sglang"
    assert (
        sglang.commands[2].argv
        == engine_flags(PD_PROFILE.profile(), "sglang", "split", router="sglang").commands[2].argv
    )


@pytest.mark.parametrize(("engine", "router"), [("vllm", "sglang"), ("sglang", "vllm")])
def test_a_routers_pd_mode_with_another_engine_is_refused(engine: str, router: str) -> None:
    with pytest.raises(ValueError, match="PD mode drives"):
        engine_flags(PD_PROFILE.profile(), engine, "split", router=router)  # type: ignore[arg-type]
    assert engine_flags(
        PD_PROFILE.profile(),
        engine,
        "split",
        router=router,  # type: ignore[arg-type]
        router_mode="regular",
    ).ok


def test_a_router_on_another_host_listens_there_not_everywhere() -> None:
    profile = Profile.model_validate(
        {
            "base_url": "http://10.0.0.10:8000/v1",
            "model": "m",
            "split": {"prefill_base_url": "http://10.0.0.11:8100", "decode_base_url": "http://10.0.0.12:8200"},
        }
    )
    for router in ("sglang", "vllm"):
        result = engine_flags(profile, router, "split", router=router)
        r = result.commands[2]
        assert value(r, "--host") == value(r, "--prometheus-host") == ["10.0.0.10"]
        assert "0.0.0.0" not in r.argv
        warning = next(c for c in result.caveats if c.code == "router-host")
        assert warning.level == "warning" and "10.0.0.10" in warning.text


def test_a_router_named_localhost_binds_127_0_0_1() -> None:
    profile = Profile.model_validate(
        {
            "base_url": "http://localhost:9000/v1",
            "model": "m",
            "split": {"prefill_base_url": "http://localhost:8100", "decode_base_url": "http://localhost:8200"},
        }
    )
    result = engine_flags(profile, "sglang", "split")
    r = result.commands[2]
    assert value(r, "--host") == value(r, "--prometheus-host") == ["127.0.0.1"]
    assert "router-host" not in {c.code for c in result.caveats}


def test_the_metrics_port_is_asked_for_or_moved_off_a_taken_one() -> None:
    asked = engine_flags(PD_PROFILE.profile(), "sglang", "split", metrics_port=39123)
    assert value(asked.commands[2], "--prometheus-port") == ["39123"]
    profile = Profile.model_validate(
        {
            "base_url": "http://127.0.0.1:29000/v1",
            "model": "m",
            "split": {"prefill_base_url": "http://127.0.0.1:8100", "decode_base_url": "http://127.0.0.1:8200"},
        }
    )
    moved = engine_flags(profile, "sglang", "split")
    assert value(moved.commands[2], "--port") == ["29000"]
    assert value(moved.commands[2], "--prometheus-port") == ["29001"]
    assert "side-port-moved" in {c.code for c in moved.caveats}
    with pytest.raises(ValueError, match="metrics port"):
        engine_flags(PD_PROFILE.profile(), "sglang", "split", metrics_port=70000)


def test_a_router_in_merged_mode_is_only_a_note() -> None:
    result = engine_flags(PD_PROFILE.profile(), "sglang", "merged", router="sglang")
    assert [c.role for c in result.commands] == ["merged"] and result.router is None
    assert "router-merged" in {c.code for c in result.caveats}


@pytest.mark.parametrize("kw", [{"router": "tgi"}, {"router_mode": "both"}, {"policy": "fastest"}])
def test_bad_router_choices_are_value_errors(kw: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="must be one of"):
        engine_flags(PD_PROFILE.profile(), "sglang", "split", **kw)  # type: ignore[arg-type]


# -- the CLI --------------------------------------------------------------------------------
def envelope_data(out: str, ok: bool = True) -> dict[str, Any]:
    """The ``data`` of ``engine-flags --format json`` (kvswitch's JSON envelope)."""
    doc = json.loads(out)
    assert (doc["command"], doc["format"], doc["ok"]) == ("engine-flags", 1, ok)
    data: dict[str, Any] = doc["data"]
    return data


def setup_profile(*edits: str) -> None:
    init(preset="vllm", model="Qwen/Qwen2.5-7B-Instruct", profile="lab")
    if edits:
        assert cli("profile", "edit", "lab", *edits).rc == 0


def test_cli_text_and_json() -> None:
    setup_profile("--chunk-size", "1024")
    text = cli("engine-flags", "--engine", "vllm")
    assert text.rc == 0, text
    assert "vllm serve Qwen/Qwen2.5-7B-Instruct" in text.out
    assert "--max-num-batched-tokens 1024" in text.out and "caveats:" in text.out
    assert text.out.startswith("kvswitch engine-flags · vLLM · merged · profile lab")
    out = cli("engine-flags", "--engine", "sglang", "--mode", "split", "--format", "json")
    assert out.rc == 0, out
    data = envelope_data(out.out)
    assert data["mode"] == "split" and data["transfer_backend"] == "mooncake" and data["ok"] is True


def test_cli_router_options() -> None:
    setup_profile()
    text = cli(
        "engine-flags",
        "--engine",
        "vllm",
        "--mode",
        "split",
        "--router",
        "sglang",
        "--router-mode",
        "regular",
        "--router-policy",
        "round_robin",
        "--router-metrics-port",
        "39000",
    )
    assert text.rc == 0, text
    assert text.out.startswith("kvswitch engine-flags · vLLM · split · SGLang's router, regular · profile lab")
    assert "# worker (prefills and decodes) →" in text.out
    shells = [c for c in text.out.split("\n\n") if c.startswith("# router")]
    assert "--policy round_robin" in shells[0] and "--prometheus-port 39000" in shells[0]
    data = envelope_data(
        cli("engine-flags", "--engine", "vllm", "--mode", "split", "--router", "vllm", "--format", "json").out
    )
    assert (data["router"], data["router_mode"]) == ("vllm", "pd")
    assert data["commands"][2]["argv"][:2] == ["vllm-router", "--host"]
    refused = cli("engine-flags", "--engine", "vllm", "--mode", "split", "--router", "sglang")
    assert refused.rc == 2 and "PD mode drives" in refused.err


def test_cli_follows_the_config_mode_and_profile() -> None:
    setup_profile()
    assert cli("switch", "split").rc == 0
    data = envelope_data(cli("engine-flags", "--engine", "vllm", "--format", "json").out)
    assert data["mode"] == "split" and data["profile"] == "lab"
    missing = cli("engine-flags", "--engine", "vllm", "--profile", "nope")
    assert missing.rc == 1 and "no profile 'nope'" in missing.err


def test_cli_refusal_exits_1() -> None:
    setup_profile("--kv-cache-dtype", "int8")
    result = cli("engine-flags", "--engine", "vllm")
    assert result.rc == 1
    assert "REFUSED" in result.out and "--kv-cache-dtype fp8" in result.out
    assert "--kv-cache-dtype int8" not in result.out


@pytest.mark.parametrize(
    "argv",
    [
        ["engine-flags"],
        ["engine-flags", "--engine", "tgi"],
        ["engine-flags", "--engine", "vllm", "--mode", "both"],
        ["engine-flags", "--engine", "vllm", "--format", "yaml"],
        ["engine-flags", "--engine", "vllm", "--bogus"],
        ["engine-flags", "--engine", "vllm", "--router", "tgi"],
        ["engine-flags", "--engine", "vllm", "--router-mode", "both"],
        ["engine-flags", "--engine", "vllm", "--router-metrics-port", "x"],
    ],
)
def test_cli_usage_errors_exit_2(argv: list[str]) -> None:
    setup_profile()
    assert cli(*argv).rc == 2


def test_cli_without_a_config_exits_1() -> None:
    result = cli("engine-flags", "--engine", "vllm")
    assert result.rc == 1 and "kvswitch init" in result.err


def test_cli_help_exits_0() -> None:
    assert cli("engine-flags", "--help").rc == 0


# -- docs/engines.md ------------------------------------------------------------------------
MARKER = "<!-- generated: kvswitch engine-flags --reference; do not edit below -->\n"


def test_engines_doc_is_fresh() -> None:
    text = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
    assert MARKER in text
    assert text.split(MARKER, 1)[1] == engines_reference(), (
        "docs/engines.md is stale: regenerate its tail with kvswitch engine-flags --reference"
    )
    assert cli("engine-flags", "--reference").out == engines_reference()


def test_engines_doc_covers_every_dtype_and_caveat() -> None:
    ref = engines_reference()
    for dtype in DTYPES:
        assert f"| `{dtype}` |" in ref
    for code in CAVEATS:
        assert f"| `{code}` |" in ref
    for name in ("llama.cpp", "TensorRT-LLM", "LMDeploy", "NVIDIA Dynamo"):
        assert f"**{name}" in ref
    for spec in ROUTER_SPECS.values():
        assert f"| {spec.name} | `{spec.install}` |" in ref
