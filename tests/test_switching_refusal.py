"""A switch never writes what lint rejects (issue 10 point 6).

A file with an error before the switch that the switch would keep or carry away (a value that
leaves the file is remembered and comes back), or one that would have an error after it, is
refused: the findings rendered as lint renders them, exit 1, no file written, no backup. The
same holds for explicit paths, for registered clients (``switch``, ``profile use``) and for the
library's ``kvswitch.switch``. Warnings and infos never block, and a hand-flipped Cline mode is
still completed (decision 22).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kvswitch
from kvswitch.errors import ConfigValidationError
from tests.clientenv import (
    backups_under,
    ccswitch_file,
    cli,
    cline_file,
    config_data,
    config_file,
    init,
    kvswitch_home,
)

TOML_HEAD = '[provider]\nbase_url = "http://127.0.0.1:8000/v1"\nmodel = "m"\n\n[cache]\nmode = "merged"\n'
JSON_HEAD = '{\n  "cline.openAiBaseUrl": "http://127.0.0.1:8000/v1",\n  "cline.openAiModelId": "m",\n'

# name: (file name, text, the (code, line) findings the refusal must list)
HOSTILE: dict[str, tuple[str, str, list[tuple[str, int]]]] = {
    "ccswitch [cache.split] is a string": (
        "config.toml",
        TOML_HEAD + 'split = "oops"\n',
        [("KVS002", 7), ("KVS110", 7), ("KVS110", 7)],
    ),
    "ccswitch [cache.split] is an array of tables": (
        "config.toml",
        TOML_HEAD + '\n[[cache.split]]\nprefill_base_url = "http://10.0.0.1:8000"\n',
        [("KVS002", 8), ("KVS110", 8), ("KVS110", 8)],
    ),
    "ccswitch chunk_size is a string (KVS002)": (
        "config.toml",
        TOML_HEAD + 'chunk_size = "512"\n',
        [("KVS002", 7)],
    ),
    "cline endpoints are null and a number": (
        "settings.json",
        JSON_HEAD + '  "cline.cacheStrategy": {\n    "mode": "merged",\n    "chunkSize": 512,\n'
        '    "prefillEndpoint": null,\n    "decodeEndpoint": 5\n  }\n}\n',
        [("KVS110", 7), ("KVS002", 8), ("KVS110", 8)],
    ),
    "cline chunkSize is a string (KVS002), which would leave and come back": (
        "settings.json",
        JSON_HEAD + '  "cline.cacheStrategy": {"mode": "merged", "chunkSize": "512"}\n}\n',
        [("KVS002", 4)],
    ),
}


def _place(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / ("cc-switch" if name.endswith(".toml") else ".vscode") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _finding_lines(err: str, path: Path) -> list[tuple[str, int]]:
    """(code, line) of every ``path:line:col: CODE error: …`` line, as lint prints them."""
    pattern = re.compile(rf"^{re.escape(str(path))}:(\d+):\d+: (KVS\d{{3}}) error: ", re.M)
    return sorted((code, int(line)) for line, code in pattern.findall(err))


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("dry_run", [False, True], ids=["switch", "dry-run"])
def test_a_switch_to_split_of_a_file_lint_rejects_is_refused(case: str, dry_run: bool, tmp_path: Path) -> None:
    name, text, expected = HOSTILE[case]
    path = _place(tmp_path, name, text)
    before = path.read_bytes()
    result = cli("switch", "split", str(path), *(["--dry-run"] if dry_run else []))
    assert result.rc == 1, result
    assert "refused, nothing was written" in result.err
    assert _finding_lines(result.err, path) == sorted(expected), result.err
    assert "switched" not in result.out and "+++" not in result.out
    assert path.read_bytes() == before
    assert backups_under(kvswitch_home()) == []


def test_the_library_raises_with_the_findings_as_data(tmp_path: Path) -> None:
    name, text, _ = HOSTILE["ccswitch chunk_size is a string (KVS002)"]
    path = _place(tmp_path, name, text)
    with pytest.raises(ConfigValidationError) as caught:
        kvswitch.switch("split", [path])
    [finding] = caught.value.diagnostics
    assert (finding.code, finding.line, finding.column, finding.path) == ("KVS002", 7, 14, path)
    assert path.read_text() == text


def test_every_refused_file_is_listed_and_a_good_one_beside_it_is_not_written(
    tmp_path: Path,
) -> None:
    good = _place(tmp_path / "good", "config.toml", TOML_HEAD)
    bad_toml = _place(tmp_path, *HOSTILE["ccswitch [cache.split] is a string"][:2])
    bad_json = _place(tmp_path, *HOSTILE["cline endpoints are null and a number"][:2])
    files = {p: p.read_bytes() for p in (good, bad_toml, bad_json)}
    result = cli("switch", "split", str(good), str(bad_toml), str(bad_json))
    assert result.rc == 1
    assert _finding_lines(result.err, bad_toml) and _finding_lines(result.err, bad_json)
    assert str(good) not in result.err
    assert {p: p.read_bytes() for p in files} == files


def test_an_error_the_switch_creates_is_placed_in_the_file_as_it_is_now(tmp_path: Path) -> None:
    path = _place(tmp_path, *HOSTILE["ccswitch [cache.split] is a string"][:2])
    result = cli("switch", "split", str(path))
    # KVS110 exists only in the planned text: it is marked and placed at the key that is on disk
    assert re.search(rf"^{re.escape(str(path))}:7:1: KVS110 error: .*\(after the change\)$", result.err, re.M)
    assert re.search(rf"^{re.escape(str(path))}:7:9: KVS002 error: cache\.split: .*'oops'", result.err, re.M)


# -- what does not block ------------------------------------------------------------------


def test_warnings_and_infos_do_not_block(tmp_path: Path) -> None:
    path = _place(tmp_path, "config.toml", TOML_HEAD + "chunk_size = 500\n")  # KVS101 warning, KVS103 after
    assert cli("lint", str(path)).rc == 0
    result = cli("switch", "split", str(path))
    assert result.rc == 0, result
    assert 'mode = "split"' in path.read_text()


def test_a_hand_flipped_cline_mode_is_still_completed(tmp_path: Path) -> None:
    # mode flipped by hand: split without endpoints is a KVS110 error now, which the switch repairs
    text = JSON_HEAD + '  "cline.cacheStrategy": {"mode": "split", "chunkSize": 512}\n}\n'
    path = _place(tmp_path, "settings.json", text)
    assert cli("lint", str(path)).rc == 1
    result = cli("switch", "split", str(path))
    assert result.rc == 0, result
    assert '"prefillEndpoint": "http://127.0.0.1:8000/v1"' in path.read_text()
    assert cli("switch", "merged", str(path)).rc == 0
    assert path.read_text() == text.replace('"split"', '"merged"')


def test_a_version_saved_meanwhile_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The editor saves an erroring version after the plan and before the commit: the edit
    re-applied to it is refused, and the user's version stays as saved."""
    import kvswitch.state

    path = _place(
        tmp_path,
        "settings.json",
        JSON_HEAD + '  "cline.cacheStrategy": {"mode": "merged", "chunkSize": 512}\n}\n',
    )
    saved = JSON_HEAD + '  "cline.cacheStrategy": {"mode": "merged", "chunkSize": "1024"}\n}\n'
    real_remember = kvswitch.state.remember
    calls = []

    def remember_then_save(*args: object, **kwargs: object) -> None:
        if not calls:
            path.write_text(saved)  # lands between kvswitch's plan and its commit
        calls.append(args)
        real_remember(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(kvswitch.state, "remember", remember_then_save)
    with pytest.raises(ConfigValidationError) as caught:
        kvswitch.switch("split", [path])
    assert [d.code for d in caught.value.diagnostics] == ["KVS002"]
    assert path.read_text() == saved


# -- registered clients -------------------------------------------------------------------


def test_a_registered_switch_refuses_and_leaves_every_file_and_the_config(tmp_path: Path) -> None:
    init()
    cc = ccswitch_file()
    cc.write_text(cc.read_text().replace("chunk_size = 512", 'chunk_size = "512"'))
    files = {p: p.read_bytes() for p in (cline_file(), cc, config_file())}
    result = cli("switch", "split")
    assert result.rc == 1, result
    assert _finding_lines(result.err, cc) == [("KVS002", 9)]
    assert {p: p.read_bytes() for p in files} == files
    assert config_data()["mode"] == "merged"


def test_profile_use_refuses_an_error_it_would_leave(tmp_path: Path) -> None:
    init()  # --no-key: no key to write over the placeholder below
    cline = cline_file()
    text = cline.read_text().replace(
        '"cline.openAiModelId"', '"cline.openAiApiKey": "<your-key>",\n    "cline.openAiModelId"'
    )
    cline.write_text(text)
    assert cli("profile", "add", "B", "--preset", "vllm", "--model", "qwen").rc == 0
    files = {p: p.read_bytes() for p in (cline, ccswitch_file(), config_file())}
    result = cli("profile", "use", "B")
    assert result.rc == 1, result
    assert [code for code, _ in _finding_lines(result.err, cline)] == ["KVS211"]
    assert {p: p.read_bytes() for p in files} == files
    assert config_data()["active_profile"] == "A"
