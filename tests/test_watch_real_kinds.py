"""The watcher and the real clients: for them a mode is a URL and a header.

A URL (or ``X-Cache-Mode`` header) equal to the other mode's is a mode change (adopted and
propagated, or reverted, or reported, as configured); any other URL edit is reported, never
adopted; a rewrite by Cline of its own file just after kvswitch wrote it is reported, never
adopted (a running Cline writes back the settings it had).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvswitch.config import edit_config
from kvswitch.edits import Set
from tests.helpers.observe import toml_mode
from tests.helpers.watching import (
    Events,
    Sandbox,
    config_data,
    kvswitch,
    running_watcher,
    save_replace,
    wait_until,
)

PROFILE = "taotoken"
MERGED = "http://127.0.0.1:18001/api"
SPLIT = "http://127.0.0.1:18002/api"


def _real_client(sb: Sandbox, relative: str, *extra: str) -> Path:
    """The profile gets one URL per mode; the real client at HOME/relative is registered and
    rendered (``profile use``) in merged mode."""
    edit_config(
        [Set(("profiles", PROFILE, "merged", "url"), MERGED), Set(("profiles", PROFILE, "split", "url"), SPLIT)]
    )
    path = sb.home / relative
    code, out = kvswitch("client", "add", str(path), *extra)
    assert code == 0, out
    code, out = kvswitch("profile", "use", PROFILE)
    assert code == 0, out
    assert path.is_file(), out
    return path


def _claude(path: Path) -> dict[str, Any]:
    env: dict[str, Any] = json.loads(path.read_text())["env"]
    return env


def test_a_claude_code_url_and_header_of_the_other_mode_are_adopted_and_propagated(sb: Sandbox, events: Events) -> None:
    claude = _real_client(sb, ".claude/settings.json")
    env = _claude(claude)
    assert env["ANTHROPIC_BASE_URL"] == MERGED and env["ANTHROPIC_CUSTOM_HEADERS"] == "X-Cache-Mode: merged"
    with running_watcher(events):
        text = claude.read_text().replace(MERGED, SPLIT).replace("X-Cache-Mode: merged", "X-Cache-Mode: split")
        save_replace(claude, text)
        assert wait_until(lambda: config_data()["mode"] == "split"), events.describe()
        assert wait_until(lambda: toml_mode(sb.toml) == "split"), events.describe()
        assert events.wait_quiet()
    (adopted,) = events.of("adopted")
    assert adopted.path == claude
    assert claude.read_text() == text  # the client's own file is already in the mode: left alone


def test_a_url_of_neither_mode_is_reported_never_adopted(sb: Sandbox, events: Events) -> None:
    claude = _real_client(sb, ".claude/settings.json")
    before_config = config_data()
    with running_watcher(events):
        text = claude.read_text().replace(MERGED, "http://127.0.0.1:18999/elsewhere")
        save_replace(claude, text)
        assert wait_until(lambda: events.of("drift")), events.describe()
        assert events.wait_quiet()
    (drift,) = events.of("drift")
    assert drift.path == claude and "not adopted" in drift.message and "provider.base_url" in drift.message
    assert not events.of("adopted", "propagated", "reverted"), events.describe()
    assert config_data() == before_config
    assert claude.read_text() == text  # reported, not undone either


def test_a_cline_rewrite_just_after_a_switch_is_reported_never_adopted(sb: Sandbox, events: Events) -> None:
    providers = _real_client(sb, ".cline/data/settings/providers.json")
    merged_text = providers.read_text()
    code, out = kvswitch("switch", "split")
    assert code == 0, out
    assert json.loads(providers.read_text())["providers"]["openai-compatible"]["settings"]["baseUrl"] == f"{SPLIT}/v1"
    with running_watcher(events):
        save_replace(providers, merged_text)  # a running Cline writes back what it had
        assert wait_until(lambda: events.of("drift")), events.describe()
        assert events.wait_quiet()
    (drift,) = events.of("drift")
    assert drift.path == providers and "Cline rewrote its file" in drift.message and "not adopted" in drift.message
    assert not events.of("adopted", "propagated", "reverted"), events.describe()
    assert config_data()["mode"] == "split" and toml_mode(sb.toml) == "split"


def test_a_real_client_flipped_by_hand_long_after_a_switch_is_adopted(sb: Sandbox, events: Events) -> None:
    """Only a rewrite *just after* kvswitch's write is suspect: the same edit later is the
    user's choice."""
    providers = _real_client(sb, ".cline/data/settings/providers.json")
    from kvswitch import state

    state_file = state.paths.dirs().state / "writes.json"
    if state_file.exists():
        state_file.unlink()  # kvswitch's last write is forgotten: as if it were long ago
    data = json.loads(providers.read_text())
    settings = data["providers"]["openai-compatible"]["settings"]
    settings["baseUrl"], settings["headers"]["X-Cache-Mode"] = f"{SPLIT}/v1", "split"
    with running_watcher(events):
        save_replace(providers, json.dumps(data, indent=2) + "\n")
        assert wait_until(lambda: config_data()["mode"] == "split"), events.describe()
        assert events.wait_quiet()
    assert events.of("adopted"), events.describe()
