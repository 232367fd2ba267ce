"""The tray starts and stops kvswitch's gateway and tells it of a switch, offscreen, over real
parts: two deterministic SSE servers as the profile's merged and split upstreams, Claude Code's
and Qwen Code's files registered with Claude Code pinned to the gateway, and the gateway a real
process (``kvswitch gateway run``, started in the background by the tray's worker). Gateway ▸
Start gateway → it answers /health and the menu says on; Mode ▸ Split → the gateway's own status
says split at once, the next request lands on the split upstream, and the pinned client's file
keeps every byte; while it runs the Gateway submenu shows its route and, per mode, the TTFT median
of its latest answers (read from the gateway itself); Profile ▸ another → it serves that
profile; Stop gateway → the process is gone and the menu says off."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kvswitch.gateway import control
from kvswitch.testing.sse_server import SSEServer
from kvswitch_gui.tray import TrayController, plain_text
from tests.gui import test_tray
from tests.gui.test_tray import _find, _open_menu, _shown, _wait_notice
from tests.gui.two_clients import seed_files

make = test_tray.make  # controllers made here are shut down after each test
TOKEN = "kvsgw-tray-test-token-0123456789abcdef"
START_WAIT = 40_000  # ms: a gateway process starting on a loaded machine; returns as soon as it answers
P50 = r"TTFT p50 \d+(\.\d)? ms"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def upstreams() -> Iterator[dict[str, SSEServer]]:
    with (
        SSEServer(ttft_ms=5, itl_ms=1, tokens=3, model="tiny") as merged,
        SSEServer(ttft_ms=5, itl_ms=1, tokens=3, model="tiny") as split,
        SSEServer(ttft_ms=5, itl_ms=1, tokens=3, model="tiny") as other,
    ):
        yield {"merged": merged, "split": split, "other": other}


@pytest.fixture
def pinned_setup(
    sandbox: Path, upstreams: dict[str, SSEServer], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Any]]:
    """kvswitch.toml: profile ``lab`` (merged and split on two SSE servers) and ``other``, the
    gateway on a free port with its token in a variable, Claude Code pinned, Qwen Code direct.
    Any gateway still running at the end is stopped."""
    from kvswitch.clients import apply_profile
    from kvswitch.gateway.pinning import pin

    monkeypatch.setenv("KVS_GW_TRAY_TOKEN", TOKEN)
    monkeypatch.setenv("KVS_GUI_LAB_KEY", "sk-upstream-lab-0123456789")
    files = seed_files(sandbox)
    port = _free_port()
    config = Path(os.environ["KVSWITCH_HOME"]) / "config" / "kvswitch.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    m, s, o = upstreams["merged"], upstreams["split"], upstreams["other"]
    config.write_text(
        'version = 2\nmode = "merged"\nactive_profile = "lab"\n\n'
        f'[gateway]\nport = {port}\ntoken = "env:KVS_GW_TRAY_TOKEN"\n\n'
        f'[profiles.lab]\nbase_url = "{m.root}"\nmodel = "tiny"\nkey = "env:KVS_GUI_LAB_KEY"\n\n'
        f'[profiles.lab.merged]\nurl = "{m.root}"\n\n[profiles.lab.split]\nurl = "{s.root}"\n\n'
        f'[profiles.other]\nbase_url = "{o.root}"\nmodel = "tiny"\nkey = "env:KVS_GUI_LAB_KEY"\n\n'
        f'[[clients]]\npath = {json.dumps(str(files["claude"]))}\nkind = "claude-code"\n\n'
        f'[[clients]]\npath = {json.dumps(str(files["qwen"]))}\nkind = "qwen-code"\nname = "qwen"\n',
        encoding="utf-8",
    )
    apply_profile("lab")
    pin(["claude-code"])
    try:
        yield {**files, "config": config, "port": port}
    finally:
        with contextlib.suppress(Exception):
            control.stop()


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


def _chat(port: int) -> str:
    """One streamed chat request through the gateway (no mode asked): the mode it says it took."""
    body = json.dumps({"model": "tiny", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=body.encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        assert b"[DONE]" in r.read()
        return str(r.headers["X-KVSwitch-Mode"])


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_start_switch_and_stop_the_gateway_from_the_tray(
    qtbot: Any, make: Callable[..., TrayController], pinned_setup: dict[str, Any], upstreams: dict[str, SSEServer]
) -> None:
    port = pinned_setup["port"]
    url = f"http://127.0.0.1:{port}"
    claude_before = pinned_setup["claude"].read_bytes()
    c = make()
    menu = _open_menu(qtbot, c)
    # off, and the pinned client needs it: the icon warns, the tooltip says why
    assert plain_text(_find(menu, "Gateway").text()) == "Gateway — off (1 pinned client needs it)"
    gateway = _find(menu, "Gateway").menu()
    assert _shown(gateway) == ["Gateway: off", "pinned: Claude Code", "Start gateway"]
    assert c.icon_key == ("merged", True)
    assert "Gateway: off: pinned clients reach nothing until it starts" in c.tooltip()
    # the pinned client: no Merged / Split of its own, a line saying the gateway chooses
    claude = _find(menu, "Clients", "Claude Code").menu()
    assert _shown(claude) == [
        "via gateway, not running, in sync",
        "via gateway: it chooses the mode (Mode ▸ switches all, or per request)",
        "Open file",
        "Open folder",
        "Restore a backup",
    ]
    assert _shown(_find(menu, "Clients", "qwen").menu())[:3] == ["merged, in sync", "Merged", "Split"]

    _find(menu, "Gateway", "Start gateway").trigger()
    assert c.busy == "starting the gateway"  # the UI thread went on; the worker starts it
    assert plain_text(_find(menu, "Gateway").text()) == "Gateway — starting…"
    qtbot.waitUntil(lambda: c.busy is None, timeout=START_WAIT)
    notice = _wait_notice(qtbot, c, "Gateway started")
    assert not notice.error, c.notices
    assert f"{url} · mode merged · profile lab" in notice.text and "pinned clients: Claude Code" in notice.text
    info = control.running()
    assert info is not None and info.url == url and info.mode == "merged" and info.profile == "lab"
    assert _get(f"{url}/health")[0] == 200  # a real process answers
    assert not _gone(info.pid) and info.pid != os.getpid()
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=test_tray.WAIT)
    menu = _open_menu(qtbot, c)
    assert plain_text(_find(menu, "Gateway").text()) == "Gateway — on, merged"
    on = [
        f"Gateway: on, merged — {url}",
        "profile lab · pinned: Claude Code",
        "route: default (merged)",
        "merged: no requests yet",
        "split: no requests yet",
    ]
    assert _shown(_find(menu, "Gateway").menu()) == [*on, "Stop gateway"]
    assert not any(a.isEnabled() for a in _find(menu, "Gateway").menu().actions()[:5])  # greyed lines
    assert _shown(_find(menu, "Clients", "Claude Code").menu())[0] == "via gateway · merged, in sync"
    assert c.icon_key == ("merged", False)
    # the window (no tray) says the same and offers Stop
    assert c.window.gateway_label.text().splitlines() == on
    assert plain_text(c.window.gateway_button.text()) == "Stop gateway" and c.window.gateway_button.isEnabled()
    assert _chat(port).startswith("merged")

    # Mode ▸ Split: the files of direct clients are switched, the gateway takes it at once
    split_before = len(upstreams["split"].stamps)
    _find(menu, "Mode", "Split").trigger()
    notice = _wait_notice(qtbot, c, "Switched to split")
    assert not notice.error and "gateway: now split for pinned clients and new requests" in notice.text
    told = control.running()
    assert told is not None and told.mode == "split" and told.pid == info.pid
    assert _chat(port) == "split; reason=default"
    assert len(upstreams["split"].stamps) == split_before + 1
    assert pinned_setup["claude"].read_bytes() == claude_before  # the pinned client: not one byte
    qwen = json.loads(pinned_setup["qwen"].read_text())["security"]["auth"]["baseUrl"]
    assert qwen.startswith(upstreams["split"].root)  # a direct client's file: the split URL
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=test_tray.WAIT)
    menu = _open_menu(qtbot, c)
    assert plain_text(_find(menu, "Gateway").text()) == "Gateway — on, split"
    assert _shown(_find(menu, "Clients", "Claude Code").menu())[0] == "via gateway · split, in sync"
    # the gateway's own figures: one answer in each mode so far (its TTFT is whatever it took)
    route, merged, split = _shown(_find(menu, "Gateway").menu())[2:5]
    assert route == "route: default (split)"
    assert re.fullmatch(rf"merged: {P50} \(last 1 request\)", merged), merged
    assert re.fullmatch(rf"split: {P50} \(last 1 request\)", split), split
    tip = _find(menu, "Gateway", split).toolTip()
    assert tip.endswith("; routes: default 1") and "TTFT" in tip
    assert c.window.gateway_label.text().splitlines()[2:] == [route, merged, split]

    # Profile ▸ other: the gateway reads its upstreams again
    _find(menu, "Profile", "other").trigger()
    notice = _wait_notice(qtbot, c, "Profile other applied")
    assert "gateway: now serving profile other for new requests" in notice.text
    reloaded = control.running()
    assert reloaded is not None and reloaded.profile == "other" and reloaded.mode == "split"
    assert upstreams["other"].root in reloaded.upstreams["split"]
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=test_tray.WAIT)

    # Stop: the process is gone, the menu says off
    menu = _open_menu(qtbot, c)
    _find(menu, "Gateway", "Stop gateway").trigger()
    notice = _wait_notice(qtbot, c, "Gateway stopped")
    assert not notice.error and notice.text.startswith("Claude Code reaches nothing until it is started again")
    assert _gone(info.pid)
    assert control.running() is None and not control.state_file().exists()
    qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=test_tray.WAIT)
    menu = _open_menu(qtbot, c)
    assert _shown(_find(menu, "Gateway").menu()) == ["Gateway: off", "pinned: Claude Code", "Start gateway"]
    with pytest.raises(OSError):
        _get(f"{url}/health")


def test_a_gateway_that_cannot_start_says_why_and_nothing_runs(
    qtbot: Any, make: Callable[..., TrayController], pinned_setup: dict[str, Any]
) -> None:
    port = pinned_setup["port"]
    with socket.socket() as taken:  # something else holds the config's port
        taken.bind(("127.0.0.1", port))
        taken.listen(1)
        c = make()
        menu = _open_menu(qtbot, c)
        _find(menu, "Gateway", "Start gateway").trigger()
        qtbot.waitUntil(lambda: c.busy is None, timeout=START_WAIT)
        notice = _wait_notice(qtbot, c, "Gateway not started")
    assert notice.error and f"port {port} on 127.0.0.1 is in use" in notice.text, notice.text
    assert control.running() is None and not control.state_file().exists()
    qtbot.waitUntil(lambda: c.idle, timeout=test_tray.WAIT)
    menu = _open_menu(qtbot, c)
    assert _shown(_find(menu, "Gateway").menu())[::2] == ["Gateway: off", "Start gateway"]
    assert plain_text(c.window.gateway_button.text()) == "Start gateway"


def test_a_gateway_that_refuses_the_switch_is_told_apart(
    qtbot: Any, make: Callable[..., TrayController], pinned_setup: dict[str, Any], upstreams: dict[str, SSEServer]
) -> None:
    """A gateway given its upstreams outright (no config to read again) refuses a reload: the
    profile is applied to the files all the same, and the notice says the gateway did not take it."""
    from tests.gateway.test_control import Served

    served = Served(control.socket_path(), None)
    try:
        c = make()
        menu = _open_menu(qtbot, c)
        assert plain_text(_find(menu, "Gateway").text()) == "Gateway — on, merged"
        # it runs with another token than the config gives: no figures, and the line says why
        lines = _shown(_find(menu, "Gateway").menu())
        assert lines[2] == "route: default (merged)"
        assert lines[3].startswith("no figures: the gateway at http://127.0.0.1:") and "HTTP 401" in lines[3]
        assert "kvsgw-test-token" not in " ".join(lines) and TOKEN not in " ".join(lines)
        assert lines[4] == "Stop gateway"
        _find(menu, "Profile", "other").trigger()
        notice = _wait_notice(qtbot, c, "Profile other applied")
        assert notice.error
        assert (
            "the running gateway did not take it: the gateway refused: this gateway was given its "
            "upstreams outright; restart it instead"
        ) in notice.text
        qwen = json.loads(pinned_setup["qwen"].read_text())["security"]["auth"]["baseUrl"]
        assert qwen.startswith(upstreams["other"].root)  # the files were switched
        assert served.gateway.settings.profile == "p"  # the gateway kept what it had
        qtbot.waitUntil(lambda: c.idle and c.busy is None, timeout=test_tray.WAIT)
        _find(_open_menu(qtbot, c), "Mode", "Split").trigger()  # a mode it takes
        notice = _wait_notice(qtbot, c, "Switched to split")
        assert not notice.error and "gateway: now split" in notice.text
        assert served.gateway.mode == "split"
        qtbot.waitUntil(lambda: c.idle, timeout=test_tray.WAIT)  # its refresh asked the gateway too
    finally:
        served.close()


def test_the_switch_jobs_tell_a_running_gateway(pinned_setup: dict[str, Any], upstreams: dict[str, SSEServer]) -> None:
    """The tray's switch jobs themselves (no Qt): a switch of every client gives a running gateway
    its mode, a profile change makes it read its upstreams again; the outcome says it took them."""
    from kvswitch.config import read_config
    from kvswitch.gateway.settings import settings_from_config
    from kvswitch_gui import jobs
    from tests.gateway.test_control import Served

    served = Served(control.socket_path(), lambda: settings_from_config(read_config()))
    try:
        outcome = jobs.switch_mode("split")
        assert served.gateway.mode == "split"
        assert outcome.gateway is not None and outcome.gateway.mode == "split" and outcome.gateway_problem is None
        outcome = jobs.use_profile("other")
        assert served.gateway.settings.profile == "other"
        assert served.gateway.settings.split.startswith(upstreams["other"].root)
        assert outcome.gateway is not None and outcome.gateway.profile == "other"
        assert served.gateway.mode == "split"  # a new profile keeps the gateway's mode
    finally:
        served.close()
    outcome = jobs.switch_mode("merged")  # none runs now: nothing to tell, nothing failed
    assert outcome.gateway is None and outcome.gateway_problem is None
    view = jobs.gateway_state()
    assert view is not None and not view.running and view.pinned == ("Claude Code",)
    assert view.url == f"http://127.0.0.1:{pinned_setup['port']}" and view.state == "Gateway: off"


def test_the_gateway_submenu_says_its_route_and_why_figures_are_missing(
    qtbot: Any, make: Callable[..., TrayController], pinned_setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway told to route ``auto`` says so; without the token where the tray runs, the
    figures line says which variable is missing; with it, the figures come (none yet)."""
    from dataclasses import replace

    from tests.gateway import test_control

    monkeypatch.setattr(test_control, "SETTINGS", replace(test_control.SETTINGS, default_route="auto", token=TOKEN))
    monkeypatch.delenv("KVS_GW_TRAY_TOKEN")
    served = test_control.Served(control.socket_path(), None)
    try:
        c = make()
        menu = _open_menu(qtbot, c)
        assert _shown(_find(menu, "Gateway").menu())[2:] == [
            "route: auto",
            "no figures: $KVS_GW_TRAY_TOKEN (the gateway's token) is not set where the tray runs",
            "Stop gateway",
        ]
        assert "new prompt tokens" in _find(menu, "Gateway", "route: auto").toolTip()
        monkeypatch.setenv("KVS_GW_TRAY_TOKEN", TOKEN)
        menu = _open_menu(qtbot, c)
        assert _shown(_find(menu, "Gateway").menu())[2:] == [
            "route: auto",
            "merged: no requests yet",
            "split: no requests yet",
            "Stop gateway",
        ]
        # a view of a gateway found running, as the jobs give it (no Qt)
        from kvswitch_gui import jobs

        view = jobs.gateway_state()
        assert view is not None and view.running and view.route == "auto" and view.live is not None
        assert view.live.url == served.gateway.url and view.live_lines == (
            "merged: no requests yet",
            "split: no requests yet",
        )
    finally:
        served.close()
    qtbot.waitUntil(lambda: c.idle, timeout=test_tray.WAIT)
    menu = _open_menu(qtbot, c)
    assert _shown(_find(menu, "Gateway").menu()) == ["Gateway: off", "pinned: Claude Code", "Start gateway"]
