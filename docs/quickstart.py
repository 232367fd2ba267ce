#!/usr/bin/env python3
"""kvswitch's main job, end to end, in a sandbox: ``python3 docs/quickstart.py``.

Needs only python3 and pip; idempotent. It sets up ``.venv`` (as the test command does),
then, inside ``.quickstart/`` (its own HOME and KVSWITCH_HOME, nothing of yours is touched):
writes the article's two client files, lints them, shows the diff a switch to split would
make, switches both files to split and back, and lints again. Each step prints the command.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANDBOX = ROOT / ".quickstart"

CLINE = """{
    // Cline-style client (S-10, S-11)
    "cline.apiProvider": "openai-compatible",
    "cline.openAiBaseUrl": "https://taotoken.net/api/",
    "cline.openAiModelId": "gpt-4o-mini",
    "cline.cacheStrategy": {
        "mode": "merged",
        "chunkSize": 500, // "tuned" by hand
        "kvCacheDtype": "auto",
        "enablePrefixCache": true
    }
}
"""
CCSWITCH = """# CC Switch (S-16)
[provider]
name = "taotoken"
base_url = "https://taotoken.net/api"
model = "gpt-4o-mini"

[cache]
mode = "merged"   # merged | split
chunk_size = 512
kv_cache_dtype = "auto"
prefix_cache = true

[request]
temperature = 0.2
max_tokens = 2048
stream = true
timeout_seconds = 120
"""


def _bootstrap() -> Path:
    spec = importlib.util.spec_from_file_location("kvswitch_tests_run", ROOT / "tests" / "run.py")
    assert spec and spec.loader
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    run.ensure_venv()
    return Path(run.PY)


def main() -> int:
    py = _bootstrap()
    shutil.rmtree(SANDBOX, ignore_errors=True)
    home = SANDBOX / "home"
    cline = home / ".cline" / "settings.json"
    toml = home / ".config" / "cc-switch" / "config.toml"
    cline.parent.mkdir(parents=True)
    toml.parent.mkdir(parents=True)
    cline.write_text(CLINE)
    toml.write_text(CCSWITCH)
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "KVSWITCH_HOME": str(SANDBOX / "kvswitch-home")}

    def kv(*args: str) -> int:
        shown = " ".join(str(a).replace(str(home), "~") for a in args)
        print(f"\n$ kvswitch {shown}", flush=True)
        return subprocess.call([str(py), "-m", "kvswitch", *args], env=env)

    steps = [
        (("lint", str(cline), str(toml)), {0, 1}),
        (("lint", "--fix", str(cline)), {0, 1}),
        (("switch", "split", "--dry-run", str(cline), str(toml)), {0}),
        (("switch", "split", str(cline), str(toml)), {0}),
        (("lint", str(cline), str(toml)), {0}),
        (("switch", "merged", str(cline), str(toml)), {0}),
    ]
    for args, ok in steps:
        if kv(*args) not in ok:
            print("quickstart: a step failed", file=sys.stderr)
            return 1
    print(f"\n{cline.relative_to(SANDBOX)} after the round trip:\n{cline.read_text()}")
    print("quickstart: done (sandbox in .quickstart/)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
