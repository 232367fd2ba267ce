"""``kvswitch doctor``: the known errors of a merged/split setup, as live checks.

Every check returns data, a :class:`Check` (name, pass|warn|fail|skip, what it saw, the fix and
where to read more); nothing here prints. Texts are in the user's language
(:mod:`kvswitch.i18n`); check names and statuses are not translated. The checks, in order
(the S-nn tags name the source digest's facts, for maintainers):

- ``config``: kvswitch lint of ``kvswitch.toml`` and every registered client (errors → fail).
- ``key-variables``: the environment variables registered clients read the active profile's
  key from (Codex, OpenCode) are set here, to that key; else → warn with the export line (the
  key masked).
- ``chunk-size``: chunk_size changed in split mode, where it is ignored (KVS103), or not a
  multiple of 64 (KVS101) → warn (S-26).
- ``reachable``: an HTTP GET of the base URL (the profile's merged URL); refused or no
  answer → fail. It says when the request went through a proxy.
- ``url-convention``: which of ``<base>/v1/models`` and ``<base>/models`` answers, against the
  profile's ``url_convention`` (D-12).
- ``auth``: the requests with the key; 401/403 → fail with the S-24 hints (whitespace or a line
  break in the resolved key, a trailing ``/`` on the base URL, which clients join into ``//``)
  and S-29 (the key's status and quota). Paths are joined the way clients join them, without
  normalising, so the trailing-slash case is reproduced, not hidden.
- ``model``: the model is in ``GET …/models`` and a one-token chat request finds it (S-08).
- ``split``: in split mode, the prefill and decode endpoints are reachable and distinct, and a
  split request to the profile's split URL (with ``X-Cache-Mode: split`` where both modes share
  one URL and the profile sends the header) does not stall (S-25).
- ``nvidia-smi``: nvidia-smi runs (locally, or through each instance's command prefix).
- ``same-gpu``: prefill and decode report different GPU UUIDs (S-27).
- ``prefix-cache``: TTFT of prompts that share more or less of a prefix against one repeated
  prompt; big swings with the prefix cache on → warn (S-28).

Keys (D-7, D-12): a key goes only to the hosts the profile names (its base URL, each mode's URL
and the split endpoints), or to the ``--base-url`` given together with ``--api-key-env``; never
to an address found in a client file, and redirects are not followed (one rule for probe and
doctor: :mod:`kvswitch.key_scope`). No key is in any check's text, in any form a server may echo it
(:mod:`kvswitch.redact`). Every request has a short timeout and a whole-answer deadline, and
every answer a size cap, so doctor never hangs and no server can exhaust its memory. Requests go
through :func:`kvswitch.probe.transport.async_client`, the probe's transport: the same proxies and the
same trusted certificates as ``kvswitch probe``.

The package, along its seams: :mod:`~kvswitch.doctor.checks` (the checks as data),
:mod:`~kvswitch.doctor.target` (what is checked), :mod:`~kvswitch.doctor.network` (the requests),
:mod:`~kvswitch.doctor.local`, :mod:`~kvswitch.doctor.server`, :mod:`~kvswitch.doctor.prefix` and
:mod:`~kvswitch.doctor.gpu` (the checks) and :mod:`~kvswitch.doctor.run` (all of them, in order, into one report).
"""

from __future__ import annotations

from kvswitch.doctor.checks import CHECKS, DOCS, Check, CheckStatus
from kvswitch.doctor.prefix import Timing, assess_prefix_cache
from kvswitch.doctor.run import DoctorReport, run_doctor
from kvswitch.doctor.target import DoctorSettings, Target

__all__ = [
    "CHECKS",
    "DOCS",
    "Check",
    "CheckStatus",
    "DoctorReport",
    "DoctorSettings",
    "Target",
    "Timing",
    "assess_prefix_cache",
    "run_doctor",
]
