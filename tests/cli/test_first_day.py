"""First-day hygiene (issue 10 point 11): a fresh ``init`` is lint-clean; one file is never
registered twice under two spellings; ``init`` without a keyring leaves a profile that works;
``lint`` of a missing file prints only the error; ``advise`` keeps names as written."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from kvswitch.advise import ProbeEvidence, Workload, advise
from tests.clientenv import (
    KEY_A,
    ccswitch_file,
    cli,
    cline_file,
    config_data,
    config_file,
    init,
)

# -- a fresh init is lint-clean ------------------------------------------------------------


@pytest.mark.parametrize("preset", ["taotoken", "vllm", "llamacpp"])
@pytest.mark.parametrize("key", [None, KEY_A], ids=["no-key", "key"])
def test_every_file_a_fresh_init_writes_has_no_findings(preset: str, key: str | None) -> None:
    result = init(preset=preset, key=key)
    written = [config_file(), cline_file(), ccswitch_file()]
    for path in written:
        assert f"{path}" in result.out
    lint = cli("lint", *map(str, written))
    assert lint.rc == 0, lint
    assert lint.out.strip() == "no problems in 3 files", lint.out


def test_the_files_are_lint_clean_again_after_a_round_trip() -> None:
    init()
    assert cli("switch", "split").rc == 0
    assert cli("switch", "merged").rc == 0
    lint = cli("lint", str(config_file()), str(cline_file()), str(ccswitch_file()))
    assert lint.out.strip() == "no problems in 3 files", lint.out


# -- one file, one registration ------------------------------------------------------------


def _spellings(tmp_path: Path) -> dict[str, Path]:
    real = cline_file()
    link_dir = tmp_path / "dotfiles"
    link_dir.mkdir()
    (link_dir / "settings.json").symlink_to(real)
    return {
        "symlink": link_dir / "settings.json",
        "dot-dot": real.parent / ".." / real.parent.name / real.name,
    }


@pytest.mark.parametrize("spelling", ["symlink", "dot-dot"])
def test_client_add_refuses_a_file_registered_under_another_spelling(tmp_path: Path, spelling: str) -> None:
    init()
    other = _spellings(tmp_path)[spelling]
    before = config_file().read_bytes()
    result = cli("client", "add", str(other))
    assert result.rc == 1, result
    assert "registered already" in result.err and str(cline_file()) in result.err
    assert config_file().read_bytes() == before
    assert cli("switch", "split").rc == 0  # and switching still works


def test_init_again_under_another_spelling_does_not_register_twice(tmp_path: Path) -> None:
    init()
    other = _spellings(tmp_path)["dot-dot"]
    result = cli(
        "init",
        "--profile",
        "B",
        "--preset",
        "vllm",
        "--model",
        "q",
        "--no-key",
        "--cline",
        str(other),
    )
    assert result.rc == 0, result
    assert [c["path"] for c in config_data()["clients"]] == [
        str(cline_file()),
        str(ccswitch_file()),
    ]
    assert cli("switch", "split").rc == 0


def test_client_add_stores_the_path_without_dot_dot(tmp_path: Path) -> None:
    init("--no-cline")
    target = tmp_path / "proj" / ".vscode" / "settings.json"
    target.parent.mkdir(parents=True)
    target.write_text(cline_file().read_text() if cline_file().exists() else '{"cline.openAiModelId": "m"}\n')
    spelled = target.parent / ".." / ".vscode" / "settings.json"
    assert cli("client", "add", str(spelled)).rc == 0
    assert config_data()["clients"][-1]["path"] == str(target)


def test_a_duplicate_written_by_hand_is_refused_clearly_not_as_changed_on_disk(
    tmp_path: Path,
) -> None:
    init()
    link = _spellings(tmp_path)["symlink"]
    with config_file().open("a") as f:
        f.write(f'\n[[clients]]\npath = "{link}"\nkind = "cline"\n')
    files = {p: p.read_bytes() for p in (cline_file(), ccswitch_file(), config_file())}
    result = cli("switch", "split")
    assert result.rc == 1, result
    assert "changed on disk" not in result.err
    assert "are the same file" in result.err and str(link) in result.err
    assert {p: p.read_bytes() for p in files} == files


def test_one_file_named_twice_on_the_command_line_is_refused(tmp_path: Path) -> None:
    init()
    other = _spellings(tmp_path)["dot-dot"]
    before = cline_file().read_bytes()
    result = cli("switch", "split", str(cline_file()), str(other))
    assert result.rc == 1 and "same file" in result.err and "changed on disk" not in result.err
    assert cline_file().read_bytes() == before


# -- init without a keyring ----------------------------------------------------------------


@pytest.fixture
def no_keyring() -> None:
    keyring.set_keyring(fail.Keyring())  # the memory_keyring fixture puts its previous one back


def test_init_without_a_keyring_leaves_a_profile_that_works(no_keyring: None) -> None:
    result = init()  # --no-key
    assert config_data()["profiles"]["A"]["key"] == "none"
    assert "no key stored yet" not in result.out  # that advice cannot work without a keyring
    assert "kvswitch profile edit A --key env:NAME" in result.out
    lint = cli("lint", str(config_file()))
    assert lint.rc == 0 and "KVS213" not in lint.out
    for argv in (
        ["profile", "use", "A"],
        ["switch", "split"],
        ["profile", "rename", "A", "B"],
        ["profile", "use", "B"],
    ):
        got = cli(*argv)
        assert got.rc == 0, (argv, got)
    assert "cline.openAiApiKey" not in cline_file().read_text()
    # the advice works: an env reference from now on
    os.environ.pop("KVSWITCH_TEST_NO_SUCH_KEY", None)
    assert cli("profile", "edit", "B", "--key", "env:KVSWITCH_TEST_NO_SUCH_KEY").rc == 0
    assert config_data()["profiles"]["B"]["key"] == "env:KVSWITCH_TEST_NO_SUCH_KEY"


def test_init_with_a_keyring_and_no_key_keeps_the_keyring_reference() -> None:
    result = init()
    assert config_data()["profiles"]["A"]["key"] == "keyring"
    assert "no key stored yet: kvswitch key set A" in result.out


def test_init_without_a_keyring_refuses_a_key_and_writes_nothing(no_keyring: None) -> None:
    result = cli(
        "init",
        "--profile",
        "A",
        "--preset",
        "taotoken",
        "--model",
        "m",
        "--key-stdin",
        stdin=KEY_A + "\n",
    )
    assert result.rc == 1 and "keyring" in result.err and KEY_A not in result.out + result.err
    assert not config_file().exists() and not cline_file().exists()


# -- lint of a missing file ----------------------------------------------------------------


def test_lint_of_a_missing_file_prints_only_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    result = cli("lint", str(missing))
    assert result.rc == 2
    assert str(missing) in result.err
    assert result.out == ""
    assert "no problems" not in result.err


def test_lint_of_a_missing_and_a_present_file_counts_the_present_one(tmp_path: Path) -> None:
    init()
    result = cli("lint", str(tmp_path / "missing.json"), str(config_file()))
    assert result.rc == 2
    assert result.out.strip() == "no problems in 1 file"


# -- advise keeps words as written -----------------------------------------------------------


def test_advise_keeps_names_and_acronyms_as_written() -> None:
    a = advise(Workload(), ProbeEvidence(label="the vLLM probe of SGLang"))
    text = "\n".join(r.text for r in a.reasons)
    assert "The vLLM probe of SGLang has no split/merged TTFT comparison" in text
    assert "vllm" not in text and "ttft" not in text


@pytest.mark.parametrize("gpus", [2, 8])
def test_advise_with_several_gpus_does_not_say_one_gpu(gpus: int) -> None:
    a = advise(Workload(gpus=gpus))
    text = "\n".join(r.text for r in a.reasons)
    assert a.mode == "merged"
    assert "1 GPU" not in text
    assert f"{gpus} GPUs" in text
    assert "--gpus" not in text  # it was given
    assert "--prompt-tokens, --concurrency or --workload" in text


def test_advise_cli_with_gpus_2() -> None:
    result = cli("advise", "--gpus", "2")
    assert result.rc == 0
    assert "1 GPU" not in result.out and "2 GPUs" in result.out


def test_a_none_reference_can_be_set_and_used() -> None:
    init()
    assert cli("profile", "edit", "A", "--key", "none").rc == 0
    assert tomllib.loads(config_file().read_text())["profiles"]["A"]["key"] == "none"
    assert cli("profile", "use", "A").rc == 0
