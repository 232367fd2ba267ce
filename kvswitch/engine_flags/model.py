"""The words and the results of engine-flags: engines, routers and their choices, the program
lines and default ports, and the commands with their numbered caveats (``EngineFlags``).

Plain data and dataclasses: nothing here builds a command line from a profile.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from kvswitch.engine_flags.caveats import Level

__all__ = [
    "BOOTSTRAP_PORT",
    "DEFAULT_BACKEND",
    "DEFAULT_PORTS",
    "ENGINES",
    "ENGINE_NAMES",
    "NIXL_SIDE_CHANNEL_PORT",
    "POLICIES",
    "ROUTERS",
    "ROUTER_METRICS_PORT",
    "ROUTER_MODES",
    "ROUTER_SPECS",
    "SGLANG_ROUTER",
    "SGLANG_SERVE",
    "SHARED_GPU_FRACTION",
    "VLLM_PROXY",
    "VLLM_ROUTER",
    "VLLM_SERVE",
    "Backend",
    "Caveat",
    "Command",
    "Engine",
    "EngineFlags",
    "EnvVar",
    "Flag",
    "Policy",
    "Role",
    "Route",
    "Router",
    "RouterMode",
    "RouterSpec",
]

Engine = Literal["vllm", "sglang"]
Backend = Literal["nixl", "mooncake"]
Role = Literal["merged", "prefill", "decode", "worker", "router"]
Router = Literal["sglang", "vllm"]
RouterMode = Literal["pd", "regular"]
Policy = Literal["cache_aware", "round_robin", "power_of_two", "random"]

ENGINES: tuple[Engine, ...] = ("vllm", "sglang")
ENGINE_NAMES: dict[str, str] = {"vllm": "vLLM", "sglang": "SGLang"}
DEFAULT_BACKEND: dict[Engine, Backend] = {"vllm": "nixl", "sglang": "mooncake"}
"""vLLM: NixlConnector (the connector of vLLM's own disaggregation guide); SGLang: its default."""


# -- program lines ------------------------------------------------------------------------
VLLM_SERVE = ("vllm", "serve")
SGLANG_SERVE = ("python", "-m", "sglang.launch_server")
VLLM_PROXY = ("python", "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py")
SGLANG_ROUTER = ("python", "-m", "sglang_router.launch_router")
VLLM_ROUTER = ("vllm-router",)

# default ports: the engines' own examples (vLLM's disaggregation guide: P 8100, D 8200, its
# proxy 8000 by default; SGLang: server 30000, PD example P 30000 / D 30001, router 8000)
DEFAULT_PORTS: dict[Engine, dict[Role, int]] = {
    "vllm": {"merged": 8000, "prefill": 8100, "decode": 8200, "router": 8000},
    "sglang": {"merged": 30000, "prefill": 30000, "decode": 30001, "router": 8000},
}
ROUTER_METRICS_PORT = 29000
"""Both routers' own default ``--prometheus-port``."""
BOOTSTRAP_PORT = 8998
NIXL_SIDE_CHANNEL_PORT = 5600
SHARED_GPU_FRACTION = "0.45"


# -- existing routers in front of the split side -------------------------------------------
@dataclass(frozen=True)
class RouterSpec:
    """An existing router kvswitch gives commands for: its program and what sets it apart."""

    name: str
    """As docs/engines.md shows it (English)."""
    program: tuple[str, ...]
    install: str
    pd_flag: str
    pd_engine: Engine
    """The engine whose prefill and decode instances its PD mode drives."""
    caveat: str
    checked: str
    """How kvswitch knows the command works."""


ROUTER_SPECS: dict[Router, RouterSpec] = {
    "sglang": RouterSpec(
        "SGLang's router",
        SGLANG_ROUTER,
        "pip install sglang-router",
        "--pd-disaggregation",
        "sglang",
        "sglang-router",
        "run by kvswitch's tests (sglang-router 0.3.2, regular and PD mode over llama.cpp workers)",
    ),
    "vllm": RouterSpec(
        "vLLM's router",
        VLLM_ROUTER,
        "pip install vllm-router",
        "--vllm-pd-disaggregation",
        "vllm",
        "vllm-router",
        "from its README and command-line reference; not run by kvswitch's tests",
    ),
}
ROUTERS: tuple[Router, ...] = ("sglang", "vllm")
ROUTER_MODES: tuple[RouterMode, ...] = ("pd", "regular")
POLICIES: tuple[Policy, ...] = ("cache_aware", "round_robin", "power_of_two", "random")
"""The load-balancing policies both routers have (``--policy``)."""


@dataclass(frozen=True)
class Route:
    """The router in front of the split side: ``name`` None is vLLM's example proxy."""

    name: Router | None
    mode: RouterMode
    policy: Policy
    metrics_port: int | None

    @property
    def shown(self) -> str:
        return self.name or "proxy"


# -- the results --------------------------------------------------------------------------
@dataclass(frozen=True)
class Caveat:
    """A caveat as it applies to one profile: the catalogue entry with its text filled in."""

    code: str
    level: Level
    flags: tuple[str, ...]
    text: str
    versions: str
    source: str
    n: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "code": self.code,
            "level": self.level,
            "flags": list(self.flags),
            "text": self.text,
            "versions": self.versions,
            "source": self.source,
        }


@dataclass(frozen=True)
class Flag:
    """One command-line option and its values (none for a switch)."""

    name: str
    values: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()

    @property
    def argv(self) -> list[str]:
        return [self.name, *self.values]


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the command needs."""

    name: str
    value: str
    caveats: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    """One process to start: the merged instance, a prefill or decode instance, or the router."""

    role: Role
    url: str
    program: tuple[str, ...]
    flags: tuple[Flag, ...]
    env: tuple[EnvVar, ...] = ()
    caveats: tuple[str, ...] = ()
    """Caveats about the command as a whole (codes)."""

    @property
    def argv(self) -> list[str]:
        return [*self.program, *(a for f in self.flags for a in f.argv)]

    def shell(self, *, multiline: bool = False) -> str:
        """The command as one shell line (``multiline``: one flag per line, ``\\`` continued)."""
        import shlex  # here, not at import: only printing a command needs it

        env = [f"{e.name}={shlex.quote(e.value)}" for e in self.env]
        head = " ".join([*env, shlex.join(self.program)])
        parts = [shlex.join(f.argv) for f in self.flags]
        if not multiline:
            return " ".join([head, *parts])
        return " \\\n    ".join([head, *parts])

    def codes(self) -> list[str]:
        """Every caveat code this command refers to, in order."""
        out = list(self.caveats)
        for e in self.env:
            out += e.caveats
        for f in self.flags:
            out += f.caveats
        return out


@dataclass(frozen=True)
class EngineFlags:
    """The commands for one profile, engine and mode, with their numbered caveats."""

    engine: Engine
    mode: str
    profile: str | None
    model: str
    transfer_backend: Backend | None
    commands: tuple[Command, ...]
    caveats: tuple[Caveat, ...]
    router: str | None = None
    """split: ``sglang`` or ``vllm`` (an existing router), ``proxy`` (vLLM's example proxy)."""
    router_mode: RouterMode | None = None

    @property
    def ok(self) -> bool:
        """False when a profile value was refused (the flag is left out of the commands)."""
        return not any(c.level == "refused" for c in self.caveats)

    @property
    def refused(self) -> tuple[Caveat, ...]:
        return tuple(c for c in self.caveats if c.level == "refused")

    def numbers(self, codes: Iterable[str]) -> list[int]:
        by_code = {c.code: c.n for c in self.caveats}
        return sorted({by_code[c] for c in codes if c in by_code})

    def as_dict(self) -> dict[str, Any]:
        def flag(f: Flag) -> dict[str, Any]:
            return {"flag": f.name, "values": list(f.values), "caveats": self.numbers(f.caveats)}

        return {
            "kvswitch_engine_flags": 1,
            "engine": self.engine,
            "mode": self.mode,
            "profile": self.profile,
            "model": self.model,
            "transfer_backend": self.transfer_backend,
            "router": self.router,
            "router_mode": self.router_mode,
            "ok": self.ok,
            "commands": [
                {
                    "role": c.role,
                    "url": c.url,
                    "program": list(c.program),
                    "env": {e.name: e.value for e in c.env},
                    "env_caveats": {e.name: self.numbers(e.caveats) for e in c.env if e.caveats},
                    "flags": [flag(f) for f in c.flags],
                    "argv": c.argv,
                    "shell": c.shell(),
                    "caveats": self.numbers(c.codes()),
                }
                for c in self.commands
            ],
            "caveats": [c.as_dict() for c in self.caveats],
        }
