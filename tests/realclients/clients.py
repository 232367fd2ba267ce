"""The real coding clients, run headless and offline inside the test namespace.

Each :class:`Client` carries its recipe: the program, the arguments of one headless turn, the
environment it needs to stay offline, where its config file lives. :func:`prepare_home` makes
a fresh ``HOME`` holding only the seed files that keep a client offline (onboarding done,
update checks, telemetry and feature-flag fetches off, OpenCode's plugin pre-installed); the
config file that names the endpoint is NOT written here: in the end-to-end tests kvswitch
writes it (the harness's own tests use ``samples.write_config``).

:func:`run_once` runs one turn ("say ok") with a fresh environment (never the test process's:
no key or proxy of this machine leaks in) and the refusing proxy in the proxy variables.
:class:`TmuxSession` drives an interactive Claude Code session in tmux.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realclients.netns import Namespace, Server, stop

__all__ = [
    "BIN",
    "CLIENTS",
    "OPENCODE_PLUGIN",
    "Client",
    "Home",
    "TmuxSession",
    "client_env",
    "missing",
    "prepare_home",
    "prepare_shared_home",
    "run_once",
]

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "tests" / "clients"
BIN = CLIENT_DIR / "node_modules" / ".bin"
OPENCODE_PLUGIN = CLIENT_DIR / "opencode-plugin"
RUN_S = 60.0
PROMPT = "say ok"


@dataclass(frozen=True)
class Client:
    """One real client and its headless, offline recipe."""

    name: str  # the program, and the id the tests use
    product: str
    config: str  # the file that names the endpoint, relative to HOME
    protocol: str  # "anthropic" | "responses" | "chat"
    argv: tuple[str, ...]  # one headless turn; the prompt is appended
    env: Mapping[str, str] = field(default_factory=dict)  # the recipe's process environment
    key_env: bool = False  # the key comes from a variable the config names, not the file
    path: Path | None = None  # the program, where it is not tests/clients' ``name``

    @property
    def program(self) -> Path:
        return self.path or BIN / self.name


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "claude",
            "Claude Code",
            ".claude/settings.json",
            "anthropic",
            ("-p",),
            {
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
            },
        ),
        Client("codex", "Codex", ".codex/config.toml", "responses", ("exec", "--skip-git-repo-check"), key_env=True),
        # without the local backend Cline starts a hub daemon that outlives the run
        Client(
            "cline", "Cline", ".cline/data/settings/providers.json", "chat", (), {"CLINE_SESSION_BACKEND_MODE": "local"}
        ),
        Client(
            "opencode",
            "OpenCode",
            ".config/opencode/opencode.json",
            "chat",
            ("run",),
            {
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
            },
            key_env=True,
        ),
        Client("qwen", "Qwen Code", ".qwen/settings.json", "chat", ("-p",)),
    )
}


def missing() -> list[str]:
    """The clients (and OpenCode's plugin) ``tests/run.py`` has not installed."""
    gone = [c.name for c in CLIENTS.values() if not c.program.exists()]
    if not (OPENCODE_PLUGIN / "node_modules" / "@opencode-ai" / "plugin").is_dir():
        gone.append("@opencode-ai/plugin")
    return gone


@dataclass(frozen=True)
class Home:
    """A fresh HOME for one client, and the project folder it runs in."""

    client: Client
    home: Path
    project: Path

    @property
    def config(self) -> Path:
        """The client's config file (the one kvswitch edits)."""
        return self.home / self.client.config


# The seed files: only what keeps a client offline and non-interactive. Codex and Qwen Code
# keep these settings in the same file that names the endpoint, so kvswitch edits a seeded file.
CODEX_SEED = """\
# seeded by the kvswitch tests: no update check, analytics or plugin fetches
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
"""
QWEN_SEED: dict[str, Any] = {"privacy": {"usageStatisticsEnabled": False}}


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _seed_claude(h: Home) -> None:
    # onboarding done and the project trusted, or an interactive session stops at dialogs
    _write_json(
        h.home / ".claude.json",
        {
            "hasCompletedOnboarding": True,
            "numStartups": 1,
            "autoUpdates": False,
            "projects": {str(h.project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
        },
    )


def _seed_codex(h: Home) -> None:
    h.config.parent.mkdir(parents=True, exist_ok=True)
    h.config.write_text(CODEX_SEED, encoding="utf-8")


def _seed_cline(h: Home) -> None:
    data = h.home / ".cline" / "data"
    _write_json(data / "settings" / "global-settings.json", {"telemetryOptOut": True, "autoUpdateEnabled": False})
    _write_json(
        data / "cache" / "feature-flags.json",
        {
            "version": 2,
            "updatedAt": int(time.time() * 1000),
            "userId": None,
            "flagsPayload": {"featureFlags": {}, "featureFlagPayloads": {}},
        },
    )


def _seed_opencode(h: Home) -> None:
    # OpenCode npm-installs @opencode-ai/plugin into its config folder on every run: give it
    # the one tests/run.py installed (hard links: fast, and npm replaces files, never edits)
    folder = h.home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(OPENCODE_PLUGIN / name, folder / name)
    try:
        shutil.copytree(OPENCODE_PLUGIN / "node_modules", folder / "node_modules", symlinks=True, copy_function=os.link)
    except (OSError, shutil.Error):
        shutil.rmtree(folder / "node_modules", ignore_errors=True)
        shutil.copytree(OPENCODE_PLUGIN / "node_modules", folder / "node_modules", symlinks=True)


def _seed_qwen(h: Home) -> None:
    _write_json(h.config, QWEN_SEED)


SEEDS: dict[str, Callable[[Home], None]] = {
    "claude": _seed_claude,
    "codex": _seed_codex,
    "cline": _seed_cline,
    "opencode": _seed_opencode,
    "qwen": _seed_qwen,
}


def prepare_home(client: Client | str, parent: Path) -> Home:
    """A fresh HOME (and project folder) under ``parent`` with ``client``'s seed files."""
    c = CLIENTS[client] if isinstance(client, str) else client
    top = parent / f"{c.name}-{uuid.uuid4().hex[:8]}"
    h = Home(c, top / "home", top / "project")
    for folder in (h.home, h.project, top / "tmp"):
        folder.mkdir(parents=True)
    SEEDS[c.name](h)
    return h


def prepare_shared_home(clients: list[str], parent: Path) -> dict[str, Home]:
    """One fresh HOME (and project folder) under ``parent`` seeded for every client in
    ``clients``: one user who runs them all (and one kvswitch that switches them together)."""
    first = prepare_home(clients[0], parent)
    homes = {clients[0]: first}
    for name in clients[1:]:
        h = Home(CLIENTS[name], first.home, first.project)
        SEEDS[name](h)
        homes[name] = h
    return homes


def client_env(h: Home, proxy: Server, env_extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a client run: HOME, XDG folders and TMPDIR inside the fresh
    home, the refusing proxy, the recipe's variables, then ``env_extra``."""
    node = shutil.which("node")
    path = [str(BIN)] + ([str(Path(node).parent)] if node else [])
    path += ["/usr/local/bin", "/usr/bin", "/bin"]
    home = h.home
    env = {
        "PATH": os.pathsep.join(dict.fromkeys(path)),
        "HOME": str(home),
        "USER": os.environ.get("USER", "root"),
        "LOGNAME": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "TMPDIR": str(home.parent / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        env[var] = proxy.url
    env.update(h.client.env)
    env.update(env_extra or {})
    return env


def run_once(
    ns: Namespace,
    h: Home,
    proxy: Server,
    env_extra: Mapping[str, str] | None = None,
    prompt: str = PROMPT,
    timeout: float = RUN_S,
    args: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """One headless turn of ``h.client`` inside ``ns`` (``args``: options added before the
    prompt); on timeout its process group is killed and the result has returncode -9 and
    "(timed out)" appended to stderr."""
    argv = [str(h.client.program), *h.client.argv, *args, prompt]
    proc = ns.spawn(
        argv,
        cwd=h.project,
        env=client_env(h, proxy, env_extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        stop(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a process in another session holds its output
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
            out, err = "", ""
        code = -9
        err = (err or "") + (
            f"\n(timed out after {timeout:.0f} s: the client, or a process it left behind, kept its output open)"
        )
    finally:
        stop(proc)  # whatever it left in its process group
    return subprocess.CompletedProcess(argv, code, out, err)


class TmuxSession:
    """An interactive Claude Code session in tmux, inside the namespace, on a socket of its
    own. :meth:`prompt` types a line and waits for the server to log a new request.

    Claude Code re-reads its settings file when it changes (a file watcher that waits for the
    file to settle, about a second): :meth:`reloads` counts the reloads its debug log reports,
    so a test waits for the reload (:meth:`wait_reload`) instead of sleeping."""

    RELOADED = "Settings changed from"

    def __init__(
        self, ns: Namespace, h: Home, proxy: Server, env_extra: Mapping[str, str] | None = None, start_s: float = RUN_S
    ) -> None:
        self.ns = ns
        # a socket path inside the temporary folder: removed with it (tmux leaves it behind)
        self.socket = str(h.home.parent / "tmux.sock")
        self.debug_log = h.home.parent / "claude-debug.log"
        env = client_env(h, proxy, env_extra)
        argv = [
            shutil.which("tmux") or "tmux",
            "-S",
            self.socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "50",
            "-c",
            str(h.project),
        ]
        # tmux's server inherits this environment; new-session -e would show it in `ps`
        claude = [str(h.client.program), "--debug-file", str(self.debug_log)]
        done = subprocess.run(
            ns.cmd([*argv, *claude]), env=env, capture_output=True, text=True, timeout=30, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"tmux did not start: {done.stderr.strip()}")
        self.wait_for(lambda screen: "\u276f" in screen or "> " in screen, start_s, "the prompt of Claude Code")

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=30, check=False
        )

    def screen(self) -> str:
        """What the pane shows now."""
        return self._tmux("capture-pane", "-p", "-t", "0").stdout

    def wait_for(self, ready: Callable[[str], bool], seconds: float, what: str) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            screen = self.screen()
            if ready(screen):
                return screen
            time.sleep(0.2)
        raise TimeoutError(f"no {what} after {seconds:.0f} s; the screen:\n{self.screen()}")

    def pane_pid(self) -> int:
        """The pid of the program in the pane (the same one as long as it was not restarted)."""
        return int(self._tmux("display-message", "-p", "-t", "0", "#{pane_pid}").stdout)

    def reloads(self) -> int:
        """How many times Claude Code has reported re-reading a changed settings file."""
        try:
            return self.debug_log.read_text(errors="replace").count(self.RELOADED)
        except FileNotFoundError:
            return 0

    def wait_reload(self, before: int, seconds: float = 15.0) -> None:
        """Wait until :meth:`reloads` exceeds ``before`` (taken before the file changed)."""
        deadline = time.monotonic() + seconds
        while self.reloads() <= before:
            if time.monotonic() > deadline:
                raise TimeoutError(f"Claude Code did not re-read its settings in {seconds:.0f} s")
            time.sleep(0.1)

    def prompt(self, text: str, server: Server, seconds: float = RUN_S) -> dict[str, Any]:
        """Type ``text`` and Enter; the first model request ``server`` logs after it."""
        server.mark()
        self._tmux("send-keys", "-t", "0", "-l", text)
        time.sleep(0.3)
        self._tmux("send-keys", "-t", "0", "Enter")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            turns = [e for e in server.new() if e["path"].endswith("/messages")]
            if turns:
                return turns[-1]
            time.sleep(0.2)
        raise TimeoutError(f"no request on {server.name} after {seconds:.0f} s; the screen:\n{self.screen()}")

    def close(self, grace: float = 5.0) -> None:
        """Kill the tmux server and wait for Claude Code to end (killed after ``grace``)."""
        try:
            pid: int | None = self.pane_pid()
        except ValueError:  # no session any more
            pid = None
        self._tmux("kill-server")
        if pid is None:
            return
        deadline = time.monotonic() + grace
        while _alive(pid):
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + grace
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie, dead and waiting for its parent, does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")
