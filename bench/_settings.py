"""Generated ``settings.json`` content shared by the benchmarks (``jsonc_edit.py``,
``big_files.py``)."""

from __future__ import annotations

import json
import random


def user_settings(target: int, seed: int = 7) -> list[str]:
    """The opening of a settings.json of about ``target`` bytes: the ``{``, a comment, then
    user settings (nested objects, comments, trailing commas), one piece per line, each ending
    with its comma; the caller adds the Cline keys and the closing ``}``."""
    rnd = random.Random(seed)
    parts = ["{\n    // generated for the benchmark\n"]
    size = i = 0
    while size < target:
        key = f"ext{i % 97}.setting{i}"
        kind = rnd.random()
        if kind < 0.5:
            line = f'    "{key}": {json.dumps(rnd.choice([True, 42, "value " * 3, 3.5]))}, // note {i}\n'
        elif kind < 0.8:
            line = f'    "{key}": {{\n        "a": [1, 2, 3,],\n        /* block {i} */ "b": "x"\n    }},\n'
        else:
            line = f'    "[lang{i}]": {{"editor.tabSize": 2, "editor.wordWrap": "on"}},\n'
        parts.append(line)
        size += len(line)
        i += 1
    return parts
