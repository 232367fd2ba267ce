"""``kvswitch init``: kvswitch's config plus client skeletons where missing.

On a terminal (stdin and stdout both TTYs) the answers no flag gave are asked, in order: where
the model is served (an endpoint a client here already uses, a preset, or a URL), the model,
and the key (hidden). Without a terminal nothing is asked: a missing answer is a usage error
that names its flag.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvswitch.i18n import tr
from kvswitch.urls import guess_convention

__all__ = ["register"]

ASK_TRIES = 3
"""How many times a question is asked again after an answer kvswitch cannot use."""


def register(sub: Any) -> None:
    from kvswitch.setup import presets

    names = ", ".join(presets())
    p = sub.add_parser(
        "init",
        help=tr("set up kvswitch: a profile, the client files, the key in the OS keyring"),
        description=tr(
            "Write kvswitch's config (or add to it), create the client files that are missing from "
            "kvswitch's skeletons (a Cline-style ~/.cline/settings.json, a CC Switch-style "
            "~/.config/cc-switch/config.toml) and register the ones that exist without touching them. "
            "On a terminal, what the flags leave out is asked: where the model is served, the model, "
            "the key (not echoed). Without a terminal give --preset or --base-url, and --model. "
            "Presets: {names}. Exit 0 done; 1 refused; 2 usage error or a missing answer."
        ).format(names=names),
    )
    p.add_argument("--profile", help=tr("profile name (default: the preset's name, else 'default')"))
    p.add_argument("--preset", help=tr("fill base URL and URL convention from a preset: {names}").format(names=names))
    p.add_argument("--base-url", help=tr("the bare OpenAI-compatible address (no trailing slash)"))
    p.add_argument("--url-convention", choices=("append-v1", "includes-v1"))
    p.add_argument("--model", help=tr("model id, as the provider lists it"))
    p.add_argument("--mode", choices=("merged", "split"), default="merged")
    for kind in _init_kinds():
        where = kind.default_paths(Path("~"), Path("~/.config"), {})[0]
        p.add_argument(
            f"--{kind.init_flag}",
            type=Path,
            help=tr("{client} (default: {path})").format(client=kind.product, path=where),
        )
        p.add_argument(
            f"--no-{kind.init_flag}", action="store_true", help=tr("do not set up {client}").format(client=kind.product)
        )
    k = p.add_mutually_exclusive_group()
    k.add_argument("--key-stdin", action="store_true", help=tr("read the API key from stdin (stored in the keyring)"))
    k.add_argument("--key-env", metavar="NAME", help=tr("the profile reads its key from this environment variable"))
    k.add_argument("--no-key", action="store_true", help=tr("set no key now (later: kvswitch key set PROFILE)"))
    p.set_defaults(func=run)


def _init_kinds() -> list[Any]:
    from kvswitch.kinds import all_kinds

    return [k for k in all_kinds(clients_only=True) if k.init_flag]


def _terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


# -- the questions ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Choice:
    """One answer to "where is the model served?"."""

    label: str
    base_url: str
    preset: str | None = None
    model: str | None = None


def _choices() -> list[_Choice]:
    """The endpoints the clients here already use (first), then every preset."""
    from kvswitch.config import existing_config
    from kvswitch.installed import detect_clients
    from kvswitch.setup import preset_title, presets
    from kvswitch.validate import show

    out: list[_Choice] = []
    seen: set[str] = set()
    try:
        found = detect_clients(existing_config(), versions=False)
    except Exception:  # noqa: BLE001 - a client file kvswitch cannot read only means no suggestion
        found = []
    for f in found:
        if f.endpoint and f.endpoint not in seen:
            seen.add(f.endpoint)
            label = tr("{url} (what {client} uses now)").format(url=show(f.endpoint), client=f.product)
            out.append(_Choice(label, f.endpoint, model=f.model))
    for name, preset in presets().items():
        label = tr("{preset}: {title} ({url})").format(preset=name, title=preset_title(name), url=preset.base_url)
        out.append(_Choice(label, preset.base_url, preset=name))
    return out


def _read(prompt: str) -> str:
    """A line typed on the terminal; end of input (Ctrl-D) is a usage error."""
    try:
        return input(prompt).strip()
    except EOFError:
        from kvswitch.cli._handler import UsageError

        print()
        raise UsageError(tr("no answer; nothing was set up")) from None


def _ask_where() -> _Choice:
    from kvswitch.cli._handler import UsageError

    choices = _choices()
    print(tr("Where is your model served?"))
    for i, choice in enumerate(choices, 1):
        print(f"  {i}. {choice.label}")
    by_preset = {c.preset: c for c in choices if c.preset}
    for _ in range(ASK_TRIES):
        answer = _read(tr("A number, a preset name or a URL: "))
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        if answer in by_preset:
            return by_preset[answer]
        if answer.startswith(("http://", "https://")):
            return _Choice(answer, answer)
        print(tr("{answer} is none of the numbers above, a preset or an http(s) URL").format(answer=repr(answer)))
    raise UsageError(tr("no usable answer; give --preset NAME or --base-url URL"))


def _ask_model(default: str | None) -> str:
    from kvswitch.cli._handler import UsageError

    prompt = (
        tr("Model id [{default}]: ").format(default=default)
        if default
        else tr("Model id (as your provider lists it): ")
    )
    for _ in range(ASK_TRIES):
        answer = _read(prompt) or default
        if answer:
            return answer
    raise UsageError(tr("no model given; give --model MODEL"))


def _ask_key_env() -> str | None:
    import re

    for _ in range(ASK_TRIES):
        answer = _read(tr("Environment variable that will hold the key (Enter: no key now): "))
        if not answer or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", answer):
            return answer or None
        print(tr("{answer} is not an environment variable name (letters, digits, _)").format(answer=repr(answer)))
    return None


# -- the command --------------------------------------------------------------------------


def _missing() -> Any:
    from kvswitch.cli._handler import UsageError
    from kvswitch.setup import presets

    return UsageError(
        tr(
            "kvswitch init has no terminal to ask on: give --preset NAME ({presets}) or --base-url URL, "
            "and --model MODEL; for the key --key-stdin, --key-env NAME or --no-key"
        ).format(presets=", ".join(presets()))
    )


def _where(args: argparse.Namespace, ask: bool) -> tuple[dict[str, Any], str | None, str | None]:
    """(profile fields so far, the preset's name, a suggested model) from the flags or the questions."""
    from kvswitch.cli._handler import UsageError
    from kvswitch.setup import presets

    data: dict[str, Any] = {}
    preset_name, suggested = args.preset, None
    if args.preset:
        preset = presets().get(args.preset)
        if preset is None:
            raise UsageError(
                tr("no preset {name} (presets: {presets})").format(name=repr(args.preset), presets=", ".join(presets()))
            )
    elif not args.base_url:
        if not ask:
            raise _missing()
        choice = _ask_where()
        preset_name, suggested = choice.preset, choice.model
        if choice.preset is None:
            data.update(base_url=choice.base_url, provider="custom")
            if guess_convention(choice.base_url) == "includes-v1":
                data["url_convention"] = "includes-v1"
    if preset_name:
        preset = presets()[preset_name]
        data.update(provider=preset.name, base_url=preset.base_url, url_convention=preset.url_convention)
    if args.base_url:
        data["base_url"] = args.base_url
        data.setdefault("provider", "custom")
    if args.url_convention:
        data["url_convention"] = args.url_convention
    return data, preset_name, suggested


def run(args: argparse.Namespace) -> int:
    from kvswitch.cli._handler import UsageError
    from kvswitch.cli.key import read_secret
    from kvswitch.cli.profile import checked_name, validated_profile
    from kvswitch.keys import SecretStoreError
    from kvswitch.setup import keyring_problem

    ask = _terminal()
    name = args.profile if args.profile is not None else (args.preset or "default")
    wants_keyring = not (args.no_key or args.key_env)
    no_keyring = keyring_problem(name) if wants_keyring and (args.key_stdin or ask) else None
    if no_keyring is not None:
        if args.key_stdin:  # before the key is read: it could go nowhere
            raise SecretStoreError(
                tr(
                    "{reason} The key was not read: keep it in an environment variable and give that "
                    "variable's name instead: kvswitch init --key-env NAME"
                ).format(reason=no_keyring)
            )
        print(tr("Note: {reason}").format(reason=no_keyring))
        print(
            tr(
                "So the profile will read its key from an environment variable (--key-env NAME): "
                "you are asked for its name below."
            )
        )
    data, preset_name, suggested = _where(args, ask)
    if args.profile is None and preset_name and not args.preset:
        name = preset_name
    checked_name(name)  # a usage error before anything is asked or stored
    model = args.model
    if not model:
        if not ask:
            raise UsageError(tr("give --model (the model id, as your provider lists it)"))
        model = _ask_model(suggested)
    data["model"] = model
    key_env = args.key_env
    if no_keyring is not None and ask and wants_keyring:
        key_env = _ask_key_env()
        if key_env is None:
            wants_keyring = False
    if key_env:
        data["key"] = f"env:{key_env}"
    profile = validated_profile(data)
    key = None
    if args.key_stdin:
        key = read_secret("", force_stdin=True)
    elif wants_keyring and not key_env and ask:
        key = read_secret(tr("API key for {name} (not echoed; Enter: none now): ").format(name=name)) or None
    _report(_init(name, profile, args, key), name)
    return 0


def _init(name: str, profile: Any, args: argparse.Namespace, key: str | None) -> Any:
    from kvswitch.kinds import default_client_paths
    from kvswitch.models import ClientEntry
    from kvswitch.setup import init

    defaults = default_client_paths()
    clients = []
    for kind in _init_kinds():
        if not getattr(args, f"no_{kind.init_flag}"):
            path = getattr(args, str(kind.init_flag)) or defaults[kind.id]
            clients.append(ClientEntry(path=str(path), kind=kind.id))
    return init(name, profile, clients, key=key, mode=args.mode)


def _report(result: Any, name: str) -> None:
    if result.config_written:
        print(tr("wrote {path}").format(path=result.config))
    else:
        print(tr("kept {path}").format(path=result.config))
    for path in result.created:
        if path in result.key_written:
            print(tr("created {path} (with the key; 0600)").format(path=path))
        else:
            print(tr("created {path}").format(path=path))
    for path in result.registered:
        print(
            tr(
                "registered {path} (existing file, not modified; bring it in line with: kvswitch profile use {name})"
            ).format(path=path, name=name)
        )
    if result.key_stored:
        print(tr("stored the key for {name} in the OS keyring").format(name=name))
    elif result.no_keyring is not None:
        print(
            tr(
                'profile {name} sends no key (key = "none"): there is no usable OS keyring here. '
                "To add a key later, put it in an environment variable and run: "
                "kvswitch profile edit {name} --key env:NAME (or set up a keyring, then: "
                "kvswitch key set {name})"
            ).format(name=name)
        )
    elif result.key_reference == "keyring":
        print(tr("no key stored yet: kvswitch key set {name}").format(name=name))
