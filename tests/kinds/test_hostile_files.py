"""Real clients' files written by someone else: wrong types where kvswitch writes, keys in
odd places, a header line smuggled into another value. A switch either does its job or
refuses with a clear error that names the file; it never crashes (exit 3), never leaves a
half-written file, and never shows a key the file holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvswitch.document import parse_config
from kvswitch.kinds import get_kind
from tests.clientenv import cli
from tests.kinds.kindenv import add, default_path, setup

KEY = "sk-hostile-Zq81mT5vW0pLx3"

HOSTILE: list[tuple[str, str]] = [
    ("claude-code", '{"env": []}'),
    ("claude-code", "[]"),
    ("claude-code", f'{{"env": {{"ANTHROPIC_CUSTOM_HEADERS": 5, "ANTHROPIC_AUTH_TOKEN": "{KEY}"}}}}'),
    ("claude-code", f'{{"env": {{"ANTHROPIC_BASE_URL": {{"a": 1}}, "ANTHROPIC_API_KEY": "{KEY}"}}}}'),
    ("claude-code", '{"env": {"ANTHROPIC_CUSTOM_HEADERS": "X-Cache-Mode: split\\nX-Cache-Mode: merged"}}'),
    ("codex", 'model_providers = "x"\n'),
    ("codex", '[model_providers.kvswitch]\nhttp_headers = "x"\n'),
    ("codex", "model_providers = { kvswitch = 3 }\n"),
    ("cline-providers", '{"providers": "x", "lastUsedProvider": 1}'),
    (
        "cline-providers",
        f'{{"providers": {{"openai-compatible": {{"settings": {{"headers": [], "apiKey": "{KEY}"}}}}}}}}',
    ),
    ("opencode", '{"provider": {"kvswitch": {"options": 7}}}'),
    ("qwen-code", '{"security": {"auth": "x"}}'),
    (
        "qwen-code",
        f'{{"security": {{"auth": {{"apiKey": "{KEY}"}}}}, '
        '"model": {"generationConfig": {"customHeaders": {"X-Cache-Mode": 5}}}}',
    ),
]


@pytest.mark.parametrize(("kind_id", "text"), HOSTILE)
def test_a_switch_of_a_hostile_file_succeeds_or_refuses_cleanly(kind_id: str, text: str) -> None:
    setup()
    path: Path = default_path(kind_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    add(path)
    before = path.read_bytes()
    result = cli("switch", "split")
    assert result.rc in (0, 1), result  # never an internal error
    assert KEY not in result.out + result.err
    assert "Traceback" not in result.err
    if result.rc == 1:
        assert str(path) in result.err and path.read_bytes() == before  # refused: untouched
        return
    # done: the file parses as its kind, and is in split mode as far as the client can tell
    from kvswitch.config import read_config
    from kvswitch.render import mode_defaults

    cf = parse_config(path.read_bytes(), kind_id, path)
    assert get_kind(kind_id).file_mode(cf, mode_defaults(read_config().profile()[1])) == "split"
    if KEY in text:
        assert KEY in path.read_text(encoding="utf-8")  # the user's key stays where it was
    if kind_id == "claude-code":  # one X-Cache-Mode line, never two the client would both send
        headers = cf.data["env"]["ANTHROPIC_CUSTOM_HEADERS"]
        assert [line for line in headers.splitlines() if line.startswith("X-Cache-Mode")] == ["X-Cache-Mode: split"]
