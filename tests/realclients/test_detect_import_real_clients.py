"""``kvswitch client detect`` and ``kvswitch import`` against the real clients' own files.

One sandbox HOME holds the five clients' user-level files as a user who set each client up by
hand would have them: Cline's written by its own ``cline auth`` command (the only client whose
own command writes a provider's base URL, model and key offline), the others in the shape each
client obeys (``samples``), all with an extra ``X-Team: t1`` header and no ``X-Cache-Mode``.
Each client then runs one turn against the "merged" recorder, which proves the file works and
leaves it as the client itself rewrites it (Claude Code's 2-space indent and
``DISABLE_AUTOUPDATER``, OpenCode's ``"$schema"``, Qwen Code's ``"$version"``, Cline's rewrite).

What the clients write by themselves (each run in this namespace): ``cline auth -p
openai-compatible -k KEY -m MODEL -b URL`` writes ``~/.cline/data/settings/providers.json``
(provider, apiKey, model, baseUrl; it has no option for headers); ``codex login
--with-api-key`` writes only ``~/.codex/auth.json`` (a key for OpenAI's own provider), never
``config.toml``'s provider tables; ``opencode providers login`` is an interactive prompt that
stores credentials in ``~/.local/share/opencode/auth.json``, never ``opencode.json``; ``qwen
auth`` is removed and ``--openai-base-url``/``--openai-api-key`` are not saved; Claude Code has
no ``config`` command, and its first run writes ``~/.claude/settings.json`` as ``{"env":
{"DISABLE_AUTOUPDATER": "1"}}`` (no provider).

The tests: ``detect`` finds all five (file, program on PATH through symlinks to tests/clients'
programs, the pinned versions, the file's endpoint and model), registers them, and finds
nothing in an empty HOME; it follows ``CODEX_HOME`` and ``CLAUDE_CONFIG_DIR`` where the clients
do. ``import`` turns each file into a profile (URL, model, headers, the key variable or, with
``--key``, the key into the keyring) without touching the file, and refuses (exit 1) the
files the clients' own commands write without an endpoint. An imported profile drives the real
client through ``profile use`` and ``switch`` (with or without ``--key``). Every kvswitch
output is checked for the keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realclients.clients import CLIENT_DIR, CLIENTS, CODEX_SEED, QWEN_SEED, Home, client_env
from tests.realclients.harness import MODEL, Harness, model_turns, shown
from tests.realclients.kvsandbox import KvSwitch

pytestmark = [pytest.mark.realclients, pytest.mark.slow]

KIND = {
    "claude": "claude-code",
    "codex": "codex",
    "cline": "cline-providers",
    "opencode": "opencode",
    "qwen": "qwen-code",
}
PACKAGE = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "cline": "cline",
    "opencode": "opencode-ai",
    "qwen": "@qwen-code/qwen-code",
}
KEYS = {  # one per client, none a suffix of another (the leak check looks for tails too)
    "claude": "sk-kvs-detect-4Jd8Qm2Zp7Vx",
    "codex": "sk-kvs-detect-9Tn3Wb6Lc1Ys",
    "cline": "sk-kvs-detect-2Hf5Rk8Gq4Me",
    "opencode": "sk-kvs-detect-7Pv1Xz3Nd6Ua",
    "qwen": "sk-kvs-detect-5Bw9Ej2Ty8Ko",
}
# Codex and OpenCode read the key from a variable their file names; the others hold it
KEY_VARS = {"codex": "KVS_DETECT_CODEX_KEY", "opencode": "KVS_DETECT_OPENCODE_KEY"}
TEAM = {"X-Team": "t1"}
PROVIDER = "corp"  # the provider id in Codex's and OpenCode's files (not kvswitch's own)


def pinned_versions() -> dict[str, str]:
    """The versions tests/clients pins, by client (its package.json)."""
    deps = json.loads((CLIENT_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    return {name: deps[package] for name, package in PACKAGE.items()}


def endpoint(client: str, root: str) -> str:
    """The URL the client's file names for a server's ``root`` (Claude Code: the root)."""
    return root if client == "claude" else f"{root}/v1"


def _json(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def user_file(client: str, root: str) -> str | None:
    """The file a user who set ``client`` up by hand has (``None``: the client writes it)."""
    url, key = endpoint(client, root), KEYS[client]
    if client == "claude":
        return _json(
            {
                "env": {
                    "ANTHROPIC_BASE_URL": url,
                    "ANTHROPIC_AUTH_TOKEN": key,
                    "ANTHROPIC_MODEL": MODEL,
                    "ANTHROPIC_CUSTOM_HEADERS": "X-Team: t1",
                }
            }
        )
    if client == "codex":
        return (
            f'model = "{MODEL}"\nmodel_provider = "{PROVIDER}"\n'
            + CODEX_SEED
            + f'\n[model_providers.{PROVIDER}]\nname = "Corp gateway"\nbase_url = "{url}"\n'
            f'env_key = "{KEY_VARS[client]}"\nwire_api = "responses"\n'
            'http_headers = { "X-Team" = "t1" }\n'
        )
    if client == "opencode":
        return _json(
            {
                "provider": {
                    PROVIDER: {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Corp gateway",
                        "options": {"baseURL": url, "apiKey": f"{{env:{KEY_VARS[client]}}}", "headers": TEAM},
                        "models": {MODEL: {"name": MODEL}},
                    }
                },
                "model": f"{PROVIDER}/{MODEL}",
            }
        )
    if client == "qwen":
        return _json(
            {
                **QWEN_SEED,
                "security": {"auth": {"selectedType": "openai", "apiKey": key, "baseUrl": url}},
                "model": {"name": MODEL, "generationConfig": {"customHeaders": TEAM}},
            }
        )
    return None  # cline: its own `cline auth`


def client_vars(client: str) -> dict[str, str]:
    """The key variable, for the clients that read their key from one."""
    return {KEY_VARS[client]: KEYS[client]} if client in KEY_VARS else {}


def set_up_by_hand(harness: Harness, h: Home, root: str) -> None:
    """Write ``h``'s file as its user would have it, naming the server at ``root`` (Cline:
    through ``cline auth``)."""
    client = h.client.name
    text = user_file(client, root)
    if text is not None:
        h.config.parent.mkdir(parents=True, exist_ok=True)
        h.config.write_text(text, encoding="utf-8")
        return
    # Cline's own command writes its provider file; it has no option for headers, so the
    # header is added the way Cline formats the file (JSON.stringify, two spaces)
    done = subprocess.run(
        harness.ns.cmd(
            [
                str(h.client.program),
                "auth",
                "-p",
                "openai-compatible",
                "-k",
                KEYS[client],
                "-m",
                MODEL,
                "-b",
                endpoint(client, root),
            ]
        ),
        cwd=h.project,
        env=client_env(h, harness.proxy),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"cline auth: exit {done.returncode}\n{done.stderr[-1500:]}"
    written = h.config.read_text(encoding="utf-8")
    data = json.loads(written)
    data["providers"]["openai-compatible"]["settings"]["headers"] = TEAM
    tail = "\n" if written.endswith("\n") else ""
    h.config.write_text(json.dumps(data, indent=2) + tail, encoding="utf-8")


def run_turn(harness: Harness, h: Home, mode: str, *, mode_header: bool) -> None:
    """One headless turn that lands on ``mode``'s recorder with the file's key, model and
    ``X-Team`` header (and ``X-Cache-Mode: mode`` when ``mode_header``); nothing else."""
    client, key = h.client.name, KEYS[h.client.name]
    harness.mark()
    done = harness.run(h, client_vars(client))
    target = getattr(harness, mode)
    other = harness.split if mode == "merged" else harness.merged
    entries, elsewhere = target.new(), other.new()
    context = (
        f"{client} in {mode}: exit {done.returncode}\n{shown(entries + elsewhere, key)}\n"
        f"stdout:\n{done.stdout[-1200:]}\nstderr:\n{done.stderr[-1200:]}"
    )
    assert done.returncode == 0, context
    turns = model_turns(client, entries)
    assert turns and not model_turns(client, elsewhere), context
    for turn in turns:
        headers = turn["headers"]
        its_key = headers.get("authorization") == f"Bearer {key}"  # a failure shows no key
        assert its_key, f"{client}: not its key"
        assert headers.get("x-team") == "t1", f"{client}: the X-Team header was not sent"
        assert headers.get("x-cache-mode") == (mode if mode_header else None), context
        assert turn["body"].get("model") == MODEL, context
    assert harness.proxy.new() == [], f"{client} tried to go out: {harness.proxy.new()}"
    assert harness.leftovers() == [], f"{client} left processes running"


def kvswitch(h: Home, tag: str, extra: dict[str, str] | None = None) -> KvSwitch:
    """kvswitch beside ``h`` with a kvswitch home of its own (``tag``), so tests that share
    the HOME do not share kvswitch's config."""
    kv = KvSwitch.beside(h, extra)
    kv.env["KVSWITCH_HOME"] = str(h.home.parent / f"kvswitch-{tag}")
    return kv


def config_of(kv: KvSwitch) -> dict[str, Any]:
    """kvswitch's own config file, parsed."""
    return tomllib.loads((kv.home / "config" / "kvswitch.toml").read_text(encoding="utf-8"))


@dataclass
class World:
    """The shared HOME with the five clients' files, and a PATH folder with their programs."""

    harness: Harness
    homes: dict[str, Home]
    bin: Path

    @property
    def any(self) -> Home:
        return next(iter(self.homes.values()))

    def file_bytes(self) -> dict[str, bytes]:
        return {name: h.config.read_bytes() for name, h in self.homes.items()}


@pytest.fixture(scope="module")
def world(harness: Harness) -> Iterator[World]:
    homes = harness.shared_home(*CLIENTS)
    for h in homes.values():
        set_up_by_hand(harness, h, harness.merged.url)
        run_turn(harness, h, "merged", mode_header=False)
    folder = harness.root / "path-bin"
    folder.mkdir()
    for name, c in CLIENTS.items():
        (folder / name).symlink_to(c.program)
    yield World(harness, homes, folder)


def on_path(kv: KvSwitch, folder: Path) -> KvSwitch:
    """``kv`` with PATH = ``folder`` and the system's (node for the programs' shebangs)."""
    kv.env["PATH"] = f"{folder}:/usr/bin:/bin"
    return kv


def detect_json(kv: KvSwitch, *args: str) -> dict[str, Any]:
    out = kv.run("client", "detect", "--format", "json", *args, stdin="")
    assert out.returncode == 0, f"detect: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    data = json.loads(out.stdout)["data"]  # kvswitch's JSON envelope
    assert isinstance(data, dict), out.stdout
    return data


def by_kind(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["kind"]: entry for entry in data["clients"]}


def stored_key(kv: KvSwitch, profile: str, key: str) -> bool:
    """The keyring holds ``key`` for ``profile`` (``key get --reveal``, the one command that
    prints a key; a bool, so that a failure shows no key)."""
    done = kv.run("key", "get", profile, "--reveal")
    return done.returncode == 0 and done.stdout.strip() == key


def no_key_in(outputs: list[str]) -> None:
    """No output holds a key, or a key's last 12 characters (a failure shows them masked)."""
    for out in outputs:
        for name, key in KEYS.items():
            if key[-12:] in out:
                masked = out.replace(key, "<KEY>").replace(key[-12:], "<KEY-TAIL>")
                pytest.fail(f"{name}'s key was shown:\n{masked}")


def test_detect_finds_the_five_real_clients_and_registers_them(world: World) -> None:
    before = world.file_bytes()
    kv = on_path(kvswitch(world.any, "detect"), world.bin)
    versions = pinned_versions()
    outputs: list[str] = []

    data = detect_json(kv)
    outputs.append(json.dumps(data))
    found = by_kind(data)
    assert set(KIND.values()) <= set(found), sorted(found)
    for name, h in world.homes.items():
        entry = found[KIND[name]]
        where = f"{name}: {entry}"
        assert entry["found"] is True and entry["file_exists"] is True, where
        assert entry["product"] == h.client.product, where
        assert Path(entry["file"]) == h.config, where
        assert entry["program"] == str(world.bin / name), where
        assert os.path.realpath(entry["program"]) == os.path.realpath(h.client.program), where
        assert entry["version"] == versions[name], where
        assert entry["endpoint"] == endpoint(name, world.harness.merged.url), where
        assert entry["model"] == MODEL, where
        assert entry["registered"] is False and entry["name"] is None, where
    assert data["cc_switch"]["exists"] is False, data["cc_switch"]
    assert data["cc_switch"]["database"] == str(world.any.home / ".cc-switch" / "cc-switch.db")
    assert not (kv.home / "config" / "kvswitch.toml").exists(), "detect wrote a config"

    text = kv.run("client", "detect", stdin="")  # not a terminal: it lists, asks nothing
    outputs.append(text.stdout + text.stderr)
    assert text.returncode == 0, outputs[-1]
    lines = text.stdout.splitlines()
    for name, h in world.homes.items():
        line = next((x for x in lines if h.client.product in x), None)
        assert line is not None, f"{h.client.product} not listed:\n{text.stdout}"
        assert versions[name] in text.stdout, f"{name}'s version not shown:\n{text.stdout}"
    assert "no clients found" not in text.stdout
    assert not (kv.home / "config" / "kvswitch.toml").exists(), "detect (text) wrote a config"

    data = detect_json(kv, "--register")
    outputs.append(json.dumps(data))
    assert sorted(data["registered_now"]) == sorted(KIND.values()), data["registered_now"]
    config = config_of(kv)
    assert not config.get("profiles"), "--register without a config made profiles"
    registered = {Path(c["path"]).expanduser(): c["kind"] for c in config["clients"]}
    assert registered == {h.config: KIND[name] for name, h in world.homes.items()}, registered

    listing = kv.ok("client", "list")
    outputs.append(listing)
    for name, h in world.homes.items():
        line = next((x for x in listing.splitlines() if str(h.config) in x), "")
        assert f"({KIND[name]}," in line, f"{name} not in client list:\n{listing}"

    again = by_kind(detect_json(kv))
    for name in world.homes:
        entry = again[KIND[name]]
        assert entry["registered"] is True and entry["name"] == KIND[name], entry
    data = detect_json(kv, "--register")
    assert data["registered_now"] == [], "registered twice"

    assert world.file_bytes() == before, "detect changed a client's file"
    no_key_in(outputs)


def test_detect_with_no_client_present(harness: Harness) -> None:
    top = harness.root / "nobody"
    h = Home(CLIENTS["claude"], top / "home", top / "project")
    for folder in (h.home, h.project, top / "tmp", top / "empty-bin"):
        folder.mkdir(parents=True)
    kv = on_path(kvswitch(h, "none"), top / "empty-bin")

    data = detect_json(kv)
    entries = by_kind(data)
    assert set(KIND.values()) <= set(entries), sorted(entries)
    for entry in data["clients"]:
        assert entry["found"] is False and entry["file_exists"] is False, entry
        assert entry["program"] is None and entry["version"] is None, entry
        assert entry["endpoint"] is None and entry["registered"] is False, entry
        assert Path(entry["file"]).is_relative_to(h.home), entry  # the default path, in HOME
    assert data["cc_switch"]["exists"] is False

    text = kv.run("client", "detect", stdin="")
    assert text.returncode == 0, text.stdout + text.stderr
    assert "no clients found" in text.stdout.lower(), text.stdout

    data = detect_json(kv, "--register")
    assert data["registered_now"] == [], data
    assert list(h.home.iterdir()) == [], "detect wrote into an empty HOME"


# how each test names the client to import: a kind id, Cline's short alias, or the file's path
SOURCE = {"claude": "claude-code", "codex": "codex", "cline": "cline", "opencode": "opencode", "qwen": "PATH"}


def import_json(kv: KvSwitch, *args: str) -> tuple[dict[str, Any], str]:
    """``kvswitch import ARGS --format json``: its JSON (exit 0 asserted) and all it printed."""
    done = kv.run("import", *args, "--format", "json", stdin="")
    both = done.stdout + done.stderr
    assert done.returncode == 0, f"import {' '.join(args)}: exit {done.returncode}\n{both}"
    return json.loads(done.stdout)["data"], both  # the data of kvswitch's JSON envelope


@pytest.mark.parametrize("client", list(CLIENTS))
def test_import_makes_a_profile_from_the_real_clients_file(world: World, client: str) -> None:
    h = world.homes[client]
    before = world.file_bytes()
    kv = kvswitch(h, f"import-{client}")
    source = str(h.config) if SOURCE[client] == "PATH" else SOURCE[client]
    holds_key = client not in KEY_VARS
    args = [source, "--key"] if holds_key else [source]
    name, url = KIND[client], endpoint(client, world.harness.merged.url)
    expected = {
        "name": name,
        "base_url": url,
        "model": MODEL,
        "headers": TEAM,
        "url_convention": "append-v1" if client == "claude" else "includes-v1",
        "key": "keyring" if holds_key else f"env:{KEY_VARS[client]}",
        "key_stored": holds_key,
    }
    outputs = []

    dry, out = import_json(kv, *args, "--dry-run")
    outputs.append(out)
    assert dry["dry_run"] is True and [p["name"] for p in dry["profiles"]] == [name], dry
    assert not (kv.home / "config").exists(), "import --dry-run wrote kvswitch's config"

    data, out = import_json(kv, *args)
    outputs.append(out)
    assert data["dry_run"] is False and data["skipped"] == [], data
    [profile] = data["profiles"]
    assert {k: profile[k] for k in expected} == expected, profile

    config = config_of(kv)
    assert config["active_profile"] == name, "the first import makes its profile active"
    saved = config["profiles"][name]
    assert saved["base_url"] == url and saved["model"] == MODEL, saved
    assert saved.get("url_convention", "includes-v1") == expected["url_convention"], saved
    assert saved["headers"] == TEAM, saved
    assert saved.get("mode_header", True) is profile["mode_header"], saved
    assert saved.get("key", "keyring") == expected["key"], saved
    assert config.get("clients", []) == [], "import registered a client"

    assert stored_key(kv, name, KEYS[client]) is holds_key, (
        "the keyring does not hold the file's key" if holds_key else "a key variable's value was stored"
    )
    outputs.append(kv.ok("profile", "show", name))

    # again under the same name: refused, kvswitch's config unchanged
    config_bytes = (kv.home / "config" / "kvswitch.toml").read_bytes()
    again = kv.run("import", *args, stdin="")
    outputs.append(again.stdout + again.stderr)
    assert again.returncode == 1 and name in outputs[-1], outputs[-1]
    assert (kv.home / "config" / "kvswitch.toml").read_bytes() == config_bytes

    # without --key, under another name: the key stays where it was (never into the keyring)
    plain = kv.run("import", source, "--profile", "second", stdin="")
    outputs.append(plain.stdout + plain.stderr)
    assert plain.returncode == 0, outputs[-1]
    assert "second" in config_of(kv)["profiles"]
    assert not stored_key(kv, "second", KEYS[client]), "stored without --key"
    assert config_of(kv)["active_profile"] == name, "a second import changed the active one"

    assert world.file_bytes() == before, "import changed a client's file"
    no_key_in(outputs)


DEAD_ROOT = "http://127.0.0.1:9"  # the loop's files name a dead server: only kvswitch's URLs work


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_imported_profile_drives_the_real_client(harness: Harness, client: str) -> None:
    """The loop closes: the client's own file → ``import`` → ``profile use`` and ``switch``
    with the recorders as the mode URLs → the real client follows, still sending its key,
    model and ``X-Team`` header, and ``X-Cache-Mode`` where the profile says so."""
    h = harness.home(client)
    set_up_by_hand(harness, h, DEAD_ROOT)
    holds_key = client not in KEY_VARS
    kv = kvswitch(h, "loop", client_vars(client))
    key_flag = ["--key"] if holds_key else []
    outputs = [kv.ok("import", KIND[client], "--profile", "mine", *key_flag)]
    header = config_of(kv)["profiles"]["mine"].get("mode_header", True)
    v1 = "" if client == "claude" else "/v1"
    kv.set_mode_urls("mine", harness.merged.url + v1, harness.split.url + v1)
    outputs.append(kv.ok("client", "add", str(h.config), *(["--write-key"] if holds_key else [])))
    outputs.append(kv.ok("profile", "use", "mine"))
    run_turn(harness, h, "merged", mode_header=header)
    outputs.append(kv.ok("switch", "split"))
    run_turn(harness, h, "split", mode_header=header)
    no_key_in(outputs)


def test_an_import_without_key_leaves_the_clients_own_key(harness: Harness) -> None:
    """Without ``--key`` nothing goes into the keyring and the profile sends no key of its
    own: after ``profile use`` and ``switch`` Claude Code still sends the key its file held."""
    h = harness.home("claude")
    set_up_by_hand(harness, h, DEAD_ROOT)
    kv = kvswitch(h, "no-key")
    outputs = [kv.ok("import", "claude-code", "--profile", "mine")]
    assert config_of(kv)["profiles"]["mine"]["key"] == "none"
    assert not stored_key(kv, "mine", KEYS["claude"]), "stored without --key"
    header = config_of(kv)["profiles"]["mine"].get("mode_header", True)
    kv.set_mode_urls("mine", harness.merged.url, harness.split.url)
    outputs.append(kv.ok("client", "add", str(h.config)))
    outputs.append(kv.ok("profile", "use", "mine"))
    run_turn(harness, h, "merged", mode_header=header)
    outputs.append(kv.ok("switch", "split"))
    run_turn(harness, h, "split", mode_header=header)
    no_key_in(outputs)


def test_claude_code_keeps_sending_its_key_as_x_api_key(harness: Harness) -> None:
    """A Claude Code file with ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``, what Anthropic's
    own API takes): imported with ``--key`` and written back with ``--write-key``, the client
    still sends the key once, the same way."""
    h = harness.home("claude")
    h.config.parent.mkdir(parents=True, exist_ok=True)
    key = KEYS["claude"]
    h.config.write_text(
        _json({"env": {"ANTHROPIC_BASE_URL": DEAD_ROOT, "ANTHROPIC_API_KEY": key, "ANTHROPIC_MODEL": MODEL}}),
        encoding="utf-8",
    )
    kv = kvswitch(h, "api-key")
    outputs = [kv.ok("import", "claude-code", "--key", "--profile", "mine")]
    kv.set_mode_urls("mine", harness.merged.url, harness.split.url)
    outputs.append(kv.ok("client", "add", str(h.config), "--write-key"))
    outputs.append(kv.ok("profile", "use", "mine"))
    harness.mark()
    done = harness.run(h)
    turns = model_turns("claude", harness.merged.new())
    assert done.returncode == 0 and turns, shown(turns, key)
    for turn in turns:  # booleans, so that a failure shows no key
        as_api_key = turn["headers"].get("x-api-key") == key
        as_bearer = "authorization" in turn["headers"]
        assert as_api_key, "not sent as x-api-key"
        assert not as_bearer, "the key was also sent as a bearer token"
    no_key_in(outputs)


def own_command(harness: Harness, h: Home, *args: str, stdin: str | None = None) -> None:
    """Run ``h``'s program with ``args`` inside the namespace (exit status not checked: Claude
    Code's first run without a login exits 1 after writing its files)."""
    subprocess.run(
        harness.ns.cmd([str(h.client.program), *args]),
        cwd=h.project,
        env=client_env(h, harness.proxy),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_clients_set_up_only_by_their_own_commands(harness: Harness) -> None:
    """What the clients' own commands write, where it names no endpoint of its own: Claude
    Code's first run writes ``settings.json`` with only ``DISABLE_AUTOUPDATER``; ``codex login
    --with-api-key`` writes ``auth.json`` (OpenAI's own provider) and leaves ``config.toml``
    alone; ``cline auth -p anthropic`` picks a built-in provider (no base URL). ``detect``
    lists the three with no endpoint; ``import`` refuses each (exit 1) and says why, never
    shows a key, and writes nothing."""
    homes = harness.shared_home("claude", "codex", "cline")
    claude, codex, cline = homes["claude"], homes["codex"], homes["cline"]
    harness.mark()
    own_command(harness, claude, "-p", "say ok")
    own_command(harness, codex, "login", "--with-api-key", stdin=KEYS["codex"] + "\n")
    own_command(harness, cline, "auth", "-p", "anthropic", "-k", KEYS["cline"], "-m", MODEL)
    assert harness.proxy.new() == [] and harness.leftovers() == []
    assert json.loads(claude.config.read_text(encoding="utf-8")) == {"env": {"DISABLE_AUTOUPDATER": "1"}}, (
        "Claude Code's first run wrote something else"
    )
    assert KEYS["codex"] in (codex.home / ".codex" / "auth.json").read_text(encoding="utf-8")
    assert json.loads(cline.config.read_text(encoding="utf-8"))["lastUsedProvider"] == "anthropic"
    before = {h.config: h.config.read_bytes() for h in homes.values()}

    kv = kvswitch(claude, "own")
    entries = by_kind(detect_json(kv))
    for name in homes:
        entry = entries[KIND[name]]
        assert entry["file_exists"] is True and entry["found"] is True, entry
        assert entry["endpoint"] is None and entry["model"] is None, entry
    outputs = []
    for name, h in homes.items():
        for args in ([KIND[name]], [KIND[name], "--key", "--format", "json"]):
            done = kv.run("import", *args, stdin="")
            outputs.append(done.stdout + done.stderr)
            assert done.returncode == 1, f"import {args}: exit {done.returncode}\n{outputs[-1]}"
            assert str(h.config) in outputs[-1] and "nothing to import" in outputs[-1], outputs[-1]
    assert not (kv.home / "config").exists(), "a refused import wrote kvswitch's config"
    assert {h.config: h.config.read_bytes() for h in homes.values()} == before
    no_key_in(outputs)


def test_detect_and_import_follow_codex_home_and_claude_config_dir(harness: Harness) -> None:
    """``CODEX_HOME`` and ``CLAUDE_CONFIG_DIR`` move the real clients' files (each client is
    run from there); ``detect`` and ``import`` look where the client looks."""
    homes = harness.shared_home("claude", "codex")
    moved = {
        "claude": homes["claude"].home / "elsewhere" / "claude-config",
        "codex": homes["codex"].home / "elsewhere" / "codex-home",
    }
    env = {"CLAUDE_CONFIG_DIR": str(moved["claude"]), "CODEX_HOME": str(moved["codex"])}
    files = {name: moved[name] / Path(h.client.config).name for name, h in homes.items()}
    homes["codex"].config.unlink()  # the seed goes with the file (user_file holds it)
    for name, h in homes.items():
        files[name].parent.mkdir(parents=True)
        files[name].write_text(user_file(name, harness.merged.url) or "", encoding="utf-8")
        harness.mark()
        done = harness.run(h, {**env, **client_vars(name)})
        turns = model_turns(name, harness.merged.new())
        assert done.returncode == 0 and turns, f"{name} did not use {files[name]}: {done.stderr}"
        assert not h.config.exists(), f"{name} wrote its default file though moved"

    kv = kvswitch(homes["claude"], "moved", env)
    entries = by_kind(detect_json(kv))
    for name in homes:
        entry = entries[KIND[name]]
        assert Path(entry["file"]) == files[name] and entry["file_exists"] is True, entry
        assert entry["endpoint"] == endpoint(name, harness.merged.url), entry
    data, out = import_json(kv, "codex")
    assert data["profiles"][0]["key"] == f"env:{KEY_VARS['codex']}", data
    assert str(files["codex"]) in data["profiles"][0]["source"], data
    no_key_in([out, json.dumps(entries)])
