"""``kvswitch init``: kvswitch's config, the article's client files (S-10…S-17), the key in
the OS keyring and in client files only where D-7 allows it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import json5
import pytest

from kvswitch.keys import service_name
from tests.conftest import FIXTURES
from tests.helpers.cli import Run

KEY = "sk-INITTEST-0123456789abcdef"


@pytest.fixture
def kv(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    return Run(capsys, monkeypatch)


def home() -> Path:
    return Path(os.environ["HOME"])


def cline_file() -> Path:
    return home() / ".cline" / "settings.json"


def ccswitch_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "cc-switch" / "config.toml"


def config_file() -> Path:
    return Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"


def config() -> dict[str, Any]:
    return tomllib.loads(config_file().read_text())


def perms(path: Path) -> int:
    return path.stat().st_mode & 0o777


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


# --- the article's files -------------------------------------------------------------------


def test_init_with_a_key_writes_the_articles_files(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n") == 0
    assert KEY not in kv.out + kv.err
    assert "stored the key for taotoken in the OS keyring" in kv.out
    assert memory_keyring == {(service_name(), "taotoken"): KEY}

    cline = json5.loads(cline_file().read_text())
    assert cline == {  # S-10, S-11 (the article's merged form)
        "cline.apiProvider": "openai-compatible",
        "cline.openAiBaseUrl": "https://taotoken.net/api",
        "cline.openAiApiKey": KEY,
        "cline.openAiModelId": "m",
        "cline.requestOptions": {"temperature": 0.2, "maxTokens": 2048, "stream": True},
        "cline.cacheStrategy": {"mode": "merged", "chunkSize": 512, "kvCacheDtype": "auto", "enablePrefixCache": True},
    }
    cc = tomllib.loads(ccswitch_file().read_text())
    assert cc == {  # S-16, S-17
        "provider": {"name": "taotoken", "base_url": "https://taotoken.net/api", "api_key": KEY, "model": "m"},
        "cache": {
            "mode": "merged",
            "chunk_size": 512,
            "kv_cache_dtype": "auto",
            "prefix_cache": True,
            "split": {
                "prefill_base_url": "https://taotoken.net/api",
                "decode_base_url": "https://taotoken.net/api",
                "transfer_protocol": "layer-wise",
                "max_transfer_concurrency": 4,
            },
        },
        "request": {"temperature": 0.2, "max_tokens": 2048, "stream": True, "timeout_seconds": 120},
    }
    assert '"merged" | "split"' in ccswitch_file().read_text()  # the article's comment on mode
    for path in (cline_file(), ccswitch_file()):
        assert perms(path) == 0o600, path  # they got the key
        assert f"created {path} (with the key; 0600)" in kv.out


def test_init_config_holds_a_reference_never_the_key(kv: Run) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n") == 0
    raw = config_file().read_text()
    assert KEY not in raw and KEY[3:-4] not in raw
    data = config()
    assert data["active_profile"] == "taotoken" and data["mode"] == "merged"
    prof = data["profiles"]["taotoken"]
    assert prof["key"] == "keyring"
    assert prof["base_url"] == "https://taotoken.net/api" and prof["model"] == "m"
    assert prof["url_convention"] == "append-v1"
    assert [(c["path"], c["kind"]) for c in data["clients"]] == [
        (str(cline_file()), "article-cline"),
        (str(ccswitch_file()), "article-ccswitch"),
    ]
    assert perms(config_file()) == 0o600
    assert kv("lint", str(config_file())) == 0


def test_init_in_split_mode_writes_the_split_form(kv: Run) -> None:
    assert kv("init", "--preset", "vllm", "--model", "m", "--mode", "split", "--no-key") == 0
    block = json5.loads(cline_file().read_text())["cline.cacheStrategy"]
    assert block == {  # S-12
        "mode": "split",
        "prefillEndpoint": "http://127.0.0.1:8000/v1",
        "decodeEndpoint": "http://127.0.0.1:8000/v1",
        "kvTransferProtocol": "layer-wise",
        "enablePrefixCache": True,
    }
    assert tomllib.loads(ccswitch_file().read_text())["cache"]["mode"] == "split"
    assert config()["mode"] == "split"
    assert kv("status") == 0, kv.out


def test_init_with_no_key_writes_no_key_field(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--no-key") == 0
    assert "cline.openAiApiKey" not in json5.loads(cline_file().read_text())
    assert "api_key" not in tomllib.loads(ccswitch_file().read_text())["provider"]
    assert config()["profiles"]["taotoken"]["key"] == "keyring"
    assert memory_keyring == {}
    assert "no key stored yet: kvswitch key set taotoken" in kv.out


def test_init_without_a_terminal_and_no_key_option_asks_nothing(kv: Run) -> None:
    # stdin is not a terminal: no prompt, no key read from it
    assert kv("init", "--preset", "taotoken", "--model", "m", stdin=KEY + "\n") == 0
    assert "cline.openAiApiKey" not in json5.loads(cline_file().read_text())


def test_key_env_makes_an_env_reference(kv: Run, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-env", "TAOTOKEN_KEY") == 0
    assert config()["profiles"]["taotoken"]["key"] == "env:TAOTOKEN_KEY"
    assert 'key = "env:TAOTOKEN_KEY"' in config_file().read_text()
    assert memory_keyring == {}
    assert "no key stored" not in kv.out


def test_key_env_and_key_stdin_exclude_each_other(kv: Run) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-env", "X", "--key-stdin") == 2
    assert not config_file().exists()


@pytest.mark.parametrize(
    ("preset", "base_url", "convention"),
    [  # D-11
        ("taotoken", "https://taotoken.net/api", "append-v1"),
        ("vllm", "http://127.0.0.1:8000/v1", "includes-v1"),
        ("sglang", "http://127.0.0.1:30000/v1", "includes-v1"),
        ("llamacpp", "http://127.0.0.1:8080/v1", "includes-v1"),
        ("ollama", "http://127.0.0.1:11434/v1", "includes-v1"),
        ("lmstudio", "http://127.0.0.1:1234/v1", "includes-v1"),
    ],
)
def test_presets_fill_base_url_and_url_convention(kv: Run, preset: str, base_url: str, convention: str) -> None:
    assert kv("init", "--preset", preset, "--model", "qwen", "--no-key", "--no-ccswitch") == 0
    prof = config()["profiles"][preset]
    assert (prof["base_url"], prof["url_convention"], prof["model"]) == (base_url, convention, "qwen")
    assert config()["active_profile"] == preset
    assert json5.loads(cline_file().read_text())["cline.openAiBaseUrl"] == base_url


def test_explicit_base_url_and_profile_name(kv: Run) -> None:
    assert kv("init", "--profile", "lab1", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-key") == 0
    prof = config()["profiles"]["lab1"]
    assert prof["base_url"] == "http://127.0.0.1:9/v1" and prof["provider"] == "custom"


def test_unknown_preset_is_a_usage_error(kv: Run) -> None:
    assert kv("init", "--preset", "nosuch", "--model", "m", "--no-key") == 2
    assert "nosuch" in kv.err and "taotoken" in kv.err
    assert not config_file().exists() and not cline_file().exists() and not ccswitch_file().exists()


def test_missing_model_is_a_usage_error(kv: Run) -> None:
    assert kv("init", "--preset", "taotoken", "--no-key") == 2
    assert not config_file().exists()


@pytest.mark.parametrize("bad", [" " + KEY, "sk-你的TaoToken Key", "<your-key>", ""])
def test_a_bad_key_sets_up_nothing(kv: Run, bad: str, memory_keyring: dict[tuple[str, str], str]) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=bad + "\n") == 1
    if bad.strip():
        assert bad.strip() not in kv.out + kv.err
    assert memory_keyring == {}
    assert not config_file().exists() and not cline_file().exists() and not ccswitch_file().exists()


# --- existing files ------------------------------------------------------------------------


def test_init_registers_existing_files_and_never_overwrites_them(
    kv: Run, memory_keyring: dict[tuple[str, str], str]
) -> None:
    cline_file().parent.mkdir(parents=True)
    ccswitch_file().parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "cline" / "article.json", cline_file())
    shutil.copy(FIXTURES / "ccswitch" / "article.toml", ccswitch_file())
    os.chmod(cline_file(), 0o644)
    before = cline_file().read_bytes(), ccswitch_file().read_bytes()
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n") == 0
    assert (cline_file().read_bytes(), ccswitch_file().read_bytes()) == before
    assert perms(cline_file()) == 0o644
    assert f"registered {cline_file()} (existing file, not modified" in kv.out
    assert "created" not in kv.out
    assert [c["path"] for c in config()["clients"]] == [str(cline_file()), str(ccswitch_file())]
    assert memory_keyring == {(service_name(), "taotoken"): KEY}


def test_init_twice_keeps_everything(kv: Run) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n") == 0
    files = {p: p.read_bytes() for p in (cline_file(), ccswitch_file(), config_file())}
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n") == 0
    assert {p: p.read_bytes() for p in files} == files
    assert f"kept {config_file()}" in kv.out
    assert kv.out.count("registered ") == 2


def test_init_again_with_another_profile_adds_it_and_keeps_the_files(kv: Run) -> None:
    assert kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", stdin=KEY + "\n") == 0
    clients = {p: p.read_bytes() for p in (cline_file(), ccswitch_file())}
    assert kv("init", "--preset", "vllm", "--model", "q", "--no-key") == 0
    assert {p: p.read_bytes() for p in clients} == clients
    data = config()
    assert set(data["profiles"]) == {"taotoken", "vllm"}
    assert data["active_profile"] == "taotoken"  # the active one stays
    assert len(data["clients"]) == 2


# --- D-7: no key in a git work tree ---------------------------------------------------------


def test_a_client_file_in_a_git_work_tree_never_gets_the_key(
    kv: Run, tmp_path: Path, memory_keyring: dict[tuple[str, str], str]
) -> None:
    repo = git_repo(tmp_path / "project")
    settings = repo / ".vscode" / "settings.json"  # its directory does not exist yet
    assert (
        kv("init", "--preset", "taotoken", "--model", "m", "--key-stdin", "--cline", str(settings), stdin=KEY + "\n")
        == 0
    )
    assert settings.exists() and KEY not in settings.read_text()
    assert "cline.openAiApiKey" not in json5.loads(settings.read_text())
    assert f"created {settings}\n" in kv.out
    # the CC Switch file is outside the repository and gets it
    assert tomllib.loads(ccswitch_file().read_text())["provider"]["api_key"] == KEY
    assert memory_keyring == {(service_name(), "taotoken"): KEY}
    # a profile render does not put it there either
    assert kv("profile", "use", "taotoken") == 0
    assert KEY not in settings.read_text()
    assert KEY not in kv.out + kv.err


def test_allow_key_in_repo_lets_a_registered_client_have_it(kv: Run, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "project")
    guarded = repo / "a" / "settings.json"
    allowed = repo / "b" / "settings.json"
    assert (
        kv(
            "init",
            "--preset",
            "taotoken",
            "--model",
            "m",
            "--key-stdin",
            "--cline",
            str(guarded),
            "--no-ccswitch",
            stdin=KEY + "\n",
        )
        == 0
    )
    allowed.parent.mkdir()
    shutil.copy(FIXTURES / "cline" / "article.json", allowed)
    os.chmod(allowed, 0o644)
    # `--nudge command --command true` only works around the known `client add` dest clash
    # (tests/cli/test_profile_cli.py::test_client_add_without_a_nudge_command)
    assert kv("client", "add", str(allowed), "--allow-key-in-repo", "--nudge", "command", "--command", "true") == 0, (
        kv.err
    )
    entry = next(c for c in config()["clients"] if c["path"] == str(allowed))
    assert entry["allow_key_in_repo"] is True
    assert kv("profile", "use", "taotoken") == 0
    assert KEY not in kv.out + kv.err
    assert json5.loads(allowed.read_text())["cline.openAiApiKey"] == KEY
    assert perms(allowed) == 0o600
    assert "key written (file is 0600)" in kv.out
    assert KEY not in guarded.read_text()
