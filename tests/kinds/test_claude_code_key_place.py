"""Claude Code sends ``ANTHROPIC_AUTH_TOKEN`` as a bearer token and ``ANTHROPIC_API_KEY`` as
``x-api-key``: kvswitch writes the key where the file keeps it, never a second one beside it."""

from __future__ import annotations

import json

import pytest

from kvswitch.document import parse_config
from kvswitch.kinds import RenderInput, get_kind
from kvswitch.kinds.base import mode_defaults
from kvswitch.models import Profile

PROFILE = Profile(base_url="http://127.0.0.1:8080", url_convention="append-v1", model="m")


@pytest.mark.parametrize(
    ("env", "written"),
    [
        ({"ANTHROPIC_API_KEY": "old"}, "ANTHROPIC_API_KEY"),
        ({"ANTHROPIC_AUTH_TOKEN": "old"}, "ANTHROPIC_AUTH_TOKEN"),
        ({"ANTHROPIC_AUTH_TOKEN": "old", "ANTHROPIC_API_KEY": "old2"}, "ANTHROPIC_AUTH_TOKEN"),
        ({}, "ANTHROPIC_AUTH_TOKEN"),
    ],
)
def test_the_key_goes_where_the_file_keeps_it(env: dict[str, str], written: str) -> None:
    kind = get_kind("claude-code")
    cf = parse_config(json.dumps({"env": env}), "claude-code", None)
    edits, _ = kind.render(cf, RenderInput("p", PROFILE, "merged", mode_defaults(PROFILE), key="sk-new-1234"))
    out = json.loads(cf.doc.apply(edits))["env"]
    assert out[written] == "sk-new-1234"
    keys = [k for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") if k in out]
    assert set(keys) == set(env) | {written}  # no key variable added beside the file's own
