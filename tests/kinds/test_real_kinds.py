"""The five real clients' kinds, end to end through the CLI in process: golden files from
each client's realistic default file, the round trip merged → split → merged byte for byte,
what a switch may write (only the URL and the X-Cache-Mode header, S-05), keys the real
clients' way (D-7, D-12), the mode header off, one URL per mode, status and lint."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kvswitch.document import parse_config
from kvswitch.kinds import MODE_HEADER, get_kind, get_path
from kvswitch.kinds.real import RealKind
from tests.clientenv import KEY_A, cli
from tests.kinds.kindenv import (
    CLIENTS,
    MERGED_URL,
    SPLIT_URL,
    add,
    default_path,
    mask_updated_at,
    place,
    set_profile,
    setup,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "kinds"
REGEN = os.environ.get("KVSWITCH_REGEN_GOLDEN") == "1"
REAL = sorted(CLIENTS)


def _comparable(kind_id: str, text: str) -> str:
    return mask_updated_at(text) if kind_id == "cline-providers" else text


def _golden(kind_id: str, mode: str, text: str) -> None:
    path = GOLDEN / f"{kind_id}.{mode}"
    if REGEN:
        path.write_text(_comparable(kind_id, text), encoding="utf-8", newline="")
    assert _comparable(kind_id, text) == path.read_text(encoding="utf-8"), f"differs from {path.name}"


def _data(kind_id: str, path: Path) -> Any:
    return parse_config(path.read_bytes(), kind_id, path).data


def _real(kind_id: str) -> RealKind:
    kind = get_kind(kind_id)
    assert isinstance(kind, RealKind)
    return kind


def _use(*argv: str) -> None:
    result = cli(*argv)
    assert result.rc == 0, result


# -- golden files and the round trip ------------------------------------------------------


@pytest.mark.parametrize("kind_id", REAL)
def test_golden_files(kind_id: str) -> None:
    """profile use (merged) gives golden .merged; switch split gives golden .split (Cline:
    its updatedAt masked). The goldens were generated once and checked by hand: the user's
    parts untouched, only our header line or entry, each mode's URL as the client wants it."""
    setup()
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    _golden(kind_id, "merged", path.read_text(encoding="utf-8"))
    _use("switch", "split")
    _golden(kind_id, "split", path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind_id", REAL)
def test_round_trip_is_byte_identical(kind_id: str) -> None:
    """From the file as profile use rendered it in merged mode, switch split then switch
    merged gives the same bytes (Cline: updatedAt excluded, and set anew on each write)."""
    setup()
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    merged = path.read_text(encoding="utf-8")
    _use("switch", "split")
    split = path.read_text(encoding="utf-8")
    assert split != merged
    _use("switch", "merged")
    again = path.read_text(encoding="utf-8")
    if kind_id == "cline-providers":
        assert _comparable(kind_id, again) == _comparable(kind_id, merged)
        stamps = [
            get_path(json.loads(t), ("providers", "openai-compatible", "updatedAt")) for t in (merged, split, again)
        ]
        assert all(isinstance(s, str) and s.endswith("Z") for s in stamps)
    else:
        assert again == merged


def test_codex_new_top_level_key_stays_with_the_top_level_keys() -> None:
    """Codex: model_provider is added among the top-level keys, not under the comment that
    heads the user's first table."""
    setup()
    path = place("codex")
    add(path)
    _use("profile", "use", "A")
    assert "# Azure, for work\n[model_providers.azure]" in path.read_text(encoding="utf-8")


# -- a switch writes only the URL and the header (S-05) ----------------------------------


def _flat(data: Any, prefix: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    if isinstance(data, dict) and data:
        out: dict[tuple[Any, ...], Any] = {}
        for k, v in data.items():
            out.update(_flat(v, (*prefix, k)))
        return out
    return {prefix: data}


def _header_paths(kind: RealKind, data: Any) -> set[tuple[Any, ...]]:
    if kind.id == "claude-code":
        return {("env", "ANTHROPIC_CUSTOM_HEADERS")}
    return {(*kind.headers_path(data), MODE_HEADER)}


@pytest.mark.parametrize("kind_id", REAL)
def test_switch_writes_only_url_and_header(kind_id: str) -> None:
    """After profile use (with the key written where the client keeps one), the user changes
    the model by hand; switch split changes the URL and the header and nothing else: never
    auth, never the model (Cline: and its required updatedAt)."""
    setup()
    path = place(kind_id)
    add(path, "--write-key")
    _use("profile", "use", "A")
    kind = _real(kind_id)
    model_path = kind.model_path(_data(kind_id, path))
    assert model_path is not None
    text = path.read_text(encoding="utf-8")
    hand = "hand-picked-model" if kind_id != "opencode" else "kvswitch/hand-picked-model"
    text = text.replace(f'"{json.loads(json.dumps(get_path(_data(kind_id, path), model_path)))}"', f'"{hand}"', 1)
    path.write_text(text, encoding="utf-8")
    before = _data(kind_id, path)
    assert get_path(before, model_path) == hand
    _use("switch", "split")
    after = _data(kind_id, path)
    allowed = {kind.url_path(before), *_header_paths(kind, before)}
    if kind_id == "cline-providers":
        allowed.add(("providers", "openai-compatible", "updatedAt"))
    fb, fa = _flat(before), _flat(after)
    changed = {p for p in fb.keys() | fa.keys() if fb.get(p, "<none>") != fa.get(p, "<none>")}
    assert changed and changed <= allowed, changed - allowed
    assert get_path(after, model_path) == hand
    for key_path in kind.key_paths(before):
        assert get_path(after, key_path) == get_path(before, key_path)


# -- keys the real clients' way ------------------------------------------------------------

_LITERAL_KEY = {
    "claude-code": ("env", "ANTHROPIC_AUTH_TOKEN"),
    "cline-providers": ("providers", "openai-compatible", "settings", "apiKey"),
    "qwen-code": ("security", "auth", "apiKey"),
    "opencode": ("provider", "kvswitch", "options", "apiKey"),
}


@pytest.mark.parametrize("kind_id", REAL)
def test_no_key_in_the_file_by_default(kind_id: str) -> None:
    """Real clients get no key unless their entry says --write-key (the file's mode stays)."""
    setup()
    path = place(kind_id)
    path.chmod(0o644)
    add(path)
    _use("profile", "use", "A")
    text = path.read_text(encoding="utf-8")
    assert KEY_A not in text
    if kind_id in _LITERAL_KEY and kind_id != "opencode":
        assert get_path(_data(kind_id, path), _LITERAL_KEY[kind_id]) is get_path({}, ("x",))
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.parametrize("kind_id", ["claude-code", "cline-providers", "qwen-code", "opencode"])
def test_write_key_puts_the_key_in_and_makes_the_file_private(kind_id: str) -> None:
    """client add --write-key: Claude Code's ANTHROPIC_AUTH_TOKEN, Cline's and Qwen Code's
    apiKey, OpenCode's options.apiKey hold the key, and the file becomes 0600."""
    setup()
    path = place(kind_id)
    path.chmod(0o644)
    add(path, "--write-key")
    result = cli("profile", "use", "A")
    assert result.rc == 0, result
    assert KEY_A not in result.out + result.err
    assert get_path(_data(kind_id, path), _LITERAL_KEY[kind_id]) == KEY_A
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("key", "want"),
    [("keyring", "KVSWITCH_KEY_A"), ("env:TEAM_GATEWAY_KEY", "TEAM_GATEWAY_KEY"), ("none", None)],
)
def test_codex_and_opencode_read_the_key_from_a_variable(key: str, want: str | None) -> None:
    """Codex gets env_key, OpenCode apiKey "{env:NAME}": the profile's env:NAME, or
    KVSWITCH_KEY_<PROFILE> for a keyring profile, or nothing for a profile with no key."""
    setup(key=key)
    codex, opencode = place("codex"), place("opencode")
    add(codex)
    add(opencode)
    _use("profile", "use", "A")
    assert KEY_A not in codex.read_text(encoding="utf-8") + opencode.read_text(encoding="utf-8")
    env_key = get_path(_data("codex", codex), ("model_providers", "kvswitch", "env_key"))
    api_key = get_path(_data("opencode", opencode), ("provider", "kvswitch", "options", "apiKey"))
    if want is None:
        assert env_key is get_path({}, ("x",)) and api_key is get_path({}, ("x",))
    else:
        assert env_key == want
        assert api_key == f"{{env:{want}}}"


def test_key_variable_names() -> None:
    from kvswitch.kinds.real import key_variable

    assert key_variable("A", "keyring") == "KVSWITCH_KEY_A"
    assert key_variable("team-gpu.2", "keyring") == "KVSWITCH_KEY_TEAM_GPU_2"
    assert key_variable("A", "env:MY_KEY") == "MY_KEY"
    assert key_variable("A", "none") is None


def _git_project(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return place("claude-code", "claude-project.json", root / ".claude" / "settings.json")


def test_project_claude_settings_in_a_repo_never_get_the_key(tmp_path: Path) -> None:
    """A project's .claude/settings.json inside a git work tree gets no key, even with
    --write-key (it would be committed); the URL, model and header are written."""
    setup()
    path = _git_project(tmp_path / "proj")
    add(path, "--write-key")
    _use("profile", "use", "A")
    data = _data("claude-code", path)
    assert KEY_A not in path.read_text(encoding="utf-8")
    assert get_path(data, ("env", "ANTHROPIC_BASE_URL")) == MERGED_URL
    assert get_path(data, ("permissions", "allow")) == ["Bash(pytest:*)", "Bash(ruff check:*)"]


def test_allow_key_in_repo_writes_it(tmp_path: Path) -> None:
    setup()
    path = _git_project(tmp_path / "proj")
    add(path, "--write-key", "--allow-key-in-repo")
    _use("profile", "use", "A")
    assert get_path(_data("claude-code", path), ("env", "ANTHROPIC_AUTH_TOKEN")) == KEY_A
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- the X-Cache-Mode header off ------------------------------------------------------------


def _headers(kind_id: str, path: Path) -> dict[str, str]:
    data = _data(kind_id, path)
    if kind_id == "claude-code":
        text = get_path(data, ("env", "ANTHROPIC_CUSTOM_HEADERS"))
        lines = text.splitlines() if isinstance(text, str) else []
        return {n.strip(): v.strip() for n, _, v in (line.partition(":") for line in lines)}
    value = get_path(data, _real(kind_id).headers_path(data))
    return value if isinstance(value, dict) else {}


@pytest.mark.parametrize("kind_id", REAL)
def test_mode_header_off_writes_no_header(kind_id: str) -> None:
    setup(mode_header=False)
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    _use("switch", "split")
    assert MODE_HEADER not in path.read_text(encoding="utf-8")
    assert get_path(_data(kind_id, path), _real(kind_id).url_path(_data(kind_id, path))) == _url(kind_id, SPLIT_URL)


@pytest.mark.parametrize("kind_id", REAL)
def test_turning_the_header_off_removes_only_ours(kind_id: str) -> None:
    """A file with our header and the user's own X-Team next to it (in the same header
    object for Codex, OpenCode and Cline): after mode_header = false, a switch removes our
    line or entry and keeps the user's."""
    setup()
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    if kind_id in ("codex", "opencode", "cline-providers"):
        _add_user_header(kind_id, path)
    assert _headers(kind_id, path) == {
        "X-Team": "a",
        MODE_HEADER: "merged",
        **_extra_headers(kind_id),
    }
    set_profile({("mode_header",): False})
    _use("switch", "split")
    assert _headers(kind_id, path) == {"X-Team": "a", **_extra_headers(kind_id)}
    assert MODE_HEADER not in path.read_text(encoding="utf-8")


def _extra_headers(kind_id: str) -> dict[str, str]:
    return {"X-Trace": "on"} if kind_id == "claude-code" else {}


def _add_user_header(kind_id: str, path: Path) -> None:
    """The user adds X-Team: a to kvswitch's own header object, by hand."""
    text = path.read_text(encoding="utf-8")
    if kind_id == "codex":
        text = text.replace('X-Cache-Mode = "merged"\n', 'X-Cache-Mode = "merged"\nX-Team = "a"\n', 1)
    else:
        text = text.replace('"X-Cache-Mode": "merged"', '"X-Cache-Mode": "merged", "X-Team": "a"', 1)
    path.write_text(text, encoding="utf-8")


# -- one URL per mode ------------------------------------------------------------------------


def _url(kind_id: str, root: str) -> str:
    """``root`` as the client wants it: Claude Code the root URL, the others …/v1."""
    return root if kind_id == "claude-code" else f"{root}/v1"


@pytest.mark.parametrize("convention", ["append-v1", "includes-v1"])
def test_each_mode_has_its_url(convention: str) -> None:
    """merged.url / split.url per mode, in either URL convention: Claude Code gets the root
    URL, the others the URL ending in /v1."""
    v1 = "/v1" if convention == "includes-v1" else ""
    setup(
        convention=convention,
        base_url=f"http://127.0.0.1:8000{v1}",
        merged_url=f"{MERGED_URL}{v1}",
        split_url=f"{SPLIT_URL}{v1}",
    )
    paths = {k: place(k) for k in REAL}
    for path in paths.values():
        add(path)
    _use("profile", "use", "A")
    for kind_id, path in paths.items():
        data = _data(kind_id, path)
        assert get_path(data, _real(kind_id).url_path(data)) == _url(kind_id, MERGED_URL), kind_id
    _use("switch", "split")
    for kind_id, path in paths.items():
        data = _data(kind_id, path)
        assert get_path(data, _real(kind_id).url_path(data)) == _url(kind_id, SPLIT_URL), kind_id


def test_without_mode_urls_both_modes_use_base_url() -> None:
    """A profile without merged.url/split.url: both modes use base_url; the header tells
    them apart."""
    setup(merged_url=None, split_url=None)
    path = place("qwen-code")
    add(path)
    _use("profile", "use", "A")
    _use("switch", "split")
    data = _data("qwen-code", path)
    assert get_path(data, ("security", "auth", "baseUrl")) == "http://127.0.0.1:8000/v1"
    assert _headers("qwen-code", path)[MODE_HEADER] == "split"


# -- status reads each client's mode ----------------------------------------------------------


def test_status_reads_every_real_clients_mode() -> None:
    from kvswitch.clients import status

    setup()
    paths = {k: place(k) for k in REAL}
    for path in paths.values():
        add(path)
    _use("profile", "use", "A")
    _use("switch", "split")
    now = {c.kind: c for c in status().clients}
    assert {k: (c.mode, c.in_sync) for k, c in now.items()} == {k: ("split", True) for k in REAL}
    result = cli("status")
    assert result.rc == 0, result
    assert result.out.count("] mode split · in sync") == len(REAL), result.out


@pytest.mark.parametrize("kind_id", REAL)
def test_mode_from_the_url_when_there_is_no_header(kind_id: str) -> None:
    from kvswitch.config import read_config
    from kvswitch.kinds.base import mode_defaults

    setup(mode_header=False)
    path = place(kind_id)
    add(path)
    _use("profile", "use", "A")
    _use("switch", "split")
    profile = read_config().profile()[1]
    cf = parse_config(path.read_bytes(), kind_id, path)
    assert get_kind(kind_id).file_mode(cf, mode_defaults(profile)) == "split"
    assert get_kind(kind_id).file_mode(cf, None) is None  # no header, no URLs to compare


# -- lint -----------------------------------------------------------------------------------


def _lint(path: Path, kind: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    result = cli("lint", "--format", "json", *(["--kind", kind] if kind else []), str(path))
    assert result.rc in (0, 1), result
    found = json.loads(result.out)
    items = found if isinstance(found, list) else found.get("diagnostics", found.get("findings", []))
    return result.rc, items


@pytest.mark.parametrize("kind_id", REAL)
def test_lint_is_quiet_on_realistic_files(kind_id: str) -> None:
    """No finding on each client's realistic file, before and after kvswitch renders into it."""
    setup()
    path = place(kind_id)
    assert _lint(path) == (0, [])
    add(path, "--write-key")
    _use("profile", "use", "A")
    _use("switch", "split")
    assert _lint(path) == (0, [])


def _codes(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((d["code"], d["key"]) for d in items)


_U = "http://127.0.0.1:8101"
_BAD_KEY_FILES: dict[str, Any] = {
    "claude-code": {"env": {"ANTHROPIC_BASE_URL": _U, "ANTHROPIC_AUTH_TOKEN": "@KEY@"}},
    "cline-providers": {
        "version": 1,
        "lastUsedProvider": "openai-compatible",
        "providers": {
            "openai-compatible": {
                "settings": {"baseUrl": f"{_U}/v1", "model": "m", "apiKey": "@KEY@"},
                "updatedAt": "2026-11-02T09:14:27.512Z",
            }
        },
    },
    "qwen-code": {
        "security": {"auth": {"selectedType": "openai", "baseUrl": f"{_U}/v1", "apiKey": "@KEY@"}},
        "model": {"name": "m"},
    },
    "opencode": {
        "provider": {"kvswitch": {"options": {"baseURL": f"{_U}/v1", "apiKey": "@KEY@"}}},
        "model": "kvswitch/m",
    },
}


def _with_key(kind_id: str, key: str) -> str:
    """The kind's small file with ``key`` (JSON text) where the client keeps its key."""
    return json.dumps(_BAD_KEY_FILES[kind_id], indent=2).replace('"@KEY@"', key) + "\n"


@pytest.mark.parametrize("kind_id", sorted(_BAD_KEY_FILES))
@pytest.mark.parametrize(
    ("key", "code"),
    [
        (json.dumps(KEY_A + "\n"), "KVS210"),
        (json.dumps(" " + KEY_A), "KVS210"),
        ('"<your-api-key>"', "KVS211"),
    ],
)
def test_lint_finds_a_bad_literal_key(kind_id: str, key: str, code: str) -> None:
    """A key with a line break or a space around it, or a placeholder: an error where the
    client keeps its key, and the key never shown."""
    path = default_path(kind_id)
    path.parent.mkdir(parents=True)
    path.write_text(_with_key(kind_id, key), encoding="utf-8")
    result = cli("lint", "--format", "json", str(path))
    assert result.rc == 1, result
    assert code in [d["code"] for d in json.loads(result.out)], result.out
    assert KEY_A not in result.out + result.err


@pytest.mark.parametrize("ref", ["{env:TEAM_GATEWAY_KEY}", "{env:KVSWITCH_KEY_A}"])
def test_lint_takes_an_env_reference_for_opencode(ref: str) -> None:
    path = default_path("opencode")
    path.parent.mkdir(parents=True)
    path.write_text(_with_key("opencode", json.dumps(ref)), encoding="utf-8")
    assert _lint(path) == (0, [])


@pytest.mark.parametrize(
    ("kind_id", "text", "where"),
    [
        (
            "claude-code",
            '{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8101", "ANTHROPIC_BASEURL": "x"}}',
            "env.ANTHROPIC_BASEURL",
        ),
        (
            "qwen-code",
            '{"security": {"auth": {"selectedType": "openai", '
            '"baseURL": "http://127.0.0.1:8101/v1"}}, "model": {"name": "m"}}',
            "security.auth.baseURL",
        ),
        (
            "codex",
            'model = "m"\nmodel_provider = "kvswitch"\n[model_providers.kvswitch]\n'
            'base_url = "http://127.0.0.1:8101/v1"\nenv_keys = "K"\n',
            "model_providers.kvswitch.env_keys",
        ),
        (
            "opencode",
            '{"provider": {"kvswitch": {"options": {"baseURL": "http://127.0.0.1:8101/v1", '
            '"header": {}}}}, "model": "kvswitch/m"}',
            "provider.kvswitch.options.header",
        ),
    ],
)
def test_lint_reports_near_misses_only(kind_id: str, text: str, where: str) -> None:
    """KVS003 for a misspelt key kvswitch knows (a warning: exit 0), nothing for the rest."""
    path = default_path(kind_id)
    path.parent.mkdir(parents=True)
    path.write_text(text + "\n", encoding="utf-8")
    rc, items = _lint(path)
    assert (rc, _codes(items)) == (0, [("KVS003", where)])
    assert where.rsplit(".", 1)[1] in items[0]["message"]


def test_an_env_reference_is_not_shown_as_a_key() -> None:
    """OpenCode's "{env:VAR}" names a variable: status shows no key for it, and the file is
    not made private for it."""
    setup()
    path = place("opencode")
    path.chmod(0o644)
    add(path)
    _use("profile", "use", "A")
    ours = ("provider", "kvswitch", "options", "apiKey")
    assert get_path(_data("opencode", path), ours) == "{env:KVSWITCH_KEY_A}"
    assert ours not in _real("opencode").key_paths(_data("opencode", path))
    result = cli("status")
    assert result.rc == 0, result
    assert "{en" not in result.out
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.parametrize("kind_id", REAL)
def test_a_client_file_not_there_yet_is_created(kind_id: str) -> None:
    """client add of a real client's default path that does not exist yet; profile use
    creates the file, which reads as its kind by content alone and lints clean."""
    from kvswitch.kinds import detect_kind

    setup()
    path = default_path(kind_id)
    assert not path.exists()
    add(path)
    _use("profile", "use", "A")
    text = path.read_text(encoding="utf-8")
    assert detect_kind(None, text) == kind_id
    _use("switch", "split")
    data = _data(kind_id, path)
    assert get_path(data, _real(kind_id).url_path(data)) == _url(kind_id, SPLIT_URL)
    assert _headers(kind_id, path)[MODE_HEADER] == "split"
    assert _lint(path) == (0, [])
