"""Validation: every problem in a parsed file, as :class:`~kvswitch.diagnostics.Diagnostic` data.

Types and values come from the pydantic models (KVS002); the article's rules (KVS1xx,
KVS2xx) are written once against the common field names and find their keys through the
kind's field map, so a rule reads the same for a Cline file, a CC Switch file and every
profile of kvswitch's own config. Nothing here prints or writes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kvswitch.addresses import is_loopback_host
from kvswitch.diagnostics import CODES, Diagnostic, Fix, Severity
from kvswitch.document import ConfigFile
from kvswitch.i18n import tr
from kvswitch.kinds import CONFIG, MISSING, Subject, get_kind, get_path, kind_of, subjects
from kvswitch.kinds.base import NEAR_MISS
from kvswitch.records import record
from kvswitch.urls import redact_url, same_address
from kvswitch.validate import (
    NAME_MAX,
    invisible,
    is_key_reference,
    name_problem,
    nearest_chunk_size,
    query_problem,
    shell_word,
    show,
    url_problem,
)

__all__ = ["check", "looks_like_placeholder", "nearest_chunk_size", "validate_model"]

KeyPath = tuple[str | int, ...]

KNOWN_KV_DTYPES = frozenset(
    {
        "auto",
        "fp16",
        "float16",
        "f16",
        "bf16",
        "bfloat16",
        "fp32",
        "float32",
        "f32",
        "fp8",
        "fp8_e4m3",
        "fp8_e5m2",
        "fp8_inc",
        "nvfp4",
        "int8",
        "int4",
        "q8_0",
        "q4_0",
        "q4_1",
        "q5_0",
        "q5_1",
        "iq4_nl",
    }
)
_PLACEHOLDER = re.compile(
    r"你的|<[^>]*>|\{\{|\byour[-_ ]?|^(?:sk-)?x{3,}$|changeme|change[-_]me|placeholder|replace[-_ ]?me"
    r"|api[-_ ]?key[-_ ]?here|insert[-_ ]|^sk-\.{2,}|\.\.\.|…|^todo$|^none$|^null$",
    re.IGNORECASE,
)
_MODEL_PLACEHOLDER = re.compile(r"your|<[^>]*>|model[-_ ]name|^model$|xxx|placeholder|你的", re.I)


@record(slots=True)
class _Ctx:
    cf: ConfigFile
    git: bool

    def diag(
        self,
        code: str,
        message: str,
        key_path: KeyPath,
        *,
        severity: Severity | None = None,
        key: bool = False,
        fix: Fix | None = None,
    ) -> Diagnostic:
        loc = self.cf.locate(key_path, key=key)
        return Diagnostic(
            code,
            severity if severity is not None else CODES[code][0],
            message,
            loc.path,
            loc.line,
            loc.column,
            key_path,
            fix,
        )


def looks_like_placeholder(key: str) -> bool:
    """Whether an API key is a placeholder (KVS211): ``sk-你的…``, ``<…>``, ``your…``, ``xxx``…"""
    return _PLACEHOLDER.search(key.strip()) is not None


def check(cf: ConfigFile, *, git: bool = True) -> list[Diagnostic]:
    """Every finding in ``cf``, sorted by position. ``git=False`` skips the KVS212 git query."""
    ctx = _Ctx(cf, git)
    found: list[Diagnostic] = []
    bad: set[KeyPath] = set()
    for d in validate_model(cf):
        found.append(d)
        bad.add(d.key_path)
    found.extend(_unknown_keys(ctx))
    found.extend(_duplicates(ctx))
    if cf.kind == CONFIG:
        found.extend(_kvswitch_rules(ctx, bad))
    for subject in subjects(cf.kind, cf.data):
        found.extend(_subject_rules(ctx, subject, bad))
    found = _without_keys(cf, found)
    unique = {(d.code, d.key_path, d.line, d.column, d.message): d for d in found}
    return sorted(unique.values(), key=lambda d: (d.line or 0, d.column or 0, d.code))


def _without_keys(cf: ConfigFile, found: list[Diagnostic]) -> list[Diagnostic]:
    """The findings with every API key the file holds masked, wherever a message echoes it
    (a key pasted into ``base_url`` or ``mode`` too)."""
    values = [get_path(cf.data, p) for p in kind_of(cf).key_paths(cf.data)]
    keys = [v for v in values if isinstance(v, str) and len(v.strip()) >= 4]
    if not keys:
        return found
    from kvswitch.records import replace
    from kvswitch.redact import redact

    return [replace(d, message=redact(d.message, keys)) for d in found]


# -- types and values (the models' schema) -----------------------------------------------


def _owned(cf: ConfigFile) -> Any:
    """The part of the file the kind's model describes (the rest is the user's)."""
    return kind_of(cf).owned(cf.data)


def validate_model(cf: ConfigFile) -> list[Diagnostic]:
    """KVS002 for every type or value error of the kind's model, checked against the schema
    generated from it (:mod:`kvswitch.schema_check`); inputs of key fields are never shown."""
    from kvswitch.schema_check import check_schema, error_message

    ctx = _Ctx(cf, git=False)
    data = _owned(cf)
    if kind_of(cf).format == "jsonc" and not isinstance(data, dict):
        if cf.path is None:
            message = tr("the file must hold an object ({{ … }})")
        else:
            message = tr("{name} must hold an object ({{ … }})").format(name=cf.path.name)
        return [ctx.diag("KVS002", message, ())]
    out = []
    for err in check_schema(data, cf.kind):
        dotted = _dotted(err.loc) or tr("(top level)")
        if err.type == "missing":
            out.append(ctx.diag("KVS002", tr("{key}: required key is missing").format(key=dotted), err.loc))
            continue
        secret = bool(err.loc) and str(err.loc[-1]).lower().endswith(("api_key", "apikey", "key"))
        problem = error_message(err.type, err.msg, err.ctx)
        if secret or isinstance(err.input, dict | list):
            message = tr("{key}: {problem}").format(key=dotted, problem=problem)
        else:
            message = tr("{key}: {problem} (got {value})").format(key=dotted, problem=problem, value=show(err.input))
        out.append(ctx.diag("KVS002", message, err.loc))
    return out


# -- unknown and duplicate keys --------------------------------------------------------


def _object_schema(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema a value must match (through ``$ref`` and ``X | None``), if any."""
    from kvswitch.schema_check import resolve

    node = resolve(node, root)
    if "anyOf" in node:
        real = [resolve(b, root) for b in node["anyOf"] if resolve(b, root).get("type") != "null"]
        node = real[0] if len(real) == 1 else {}
    return node if node.get("type") in ("object", "array") else None


def _walk_unknown(
    data: Any, node: dict[str, Any], root: dict[str, Any], path: KeyPath, strict: bool
) -> Iterator[tuple[KeyPath, str, str | None]]:
    """Keys of ``data`` the schema ``node`` does not know (all of them when ``strict``, else
    only near-misses of known names), recursing into tables, tables of tables and arrays."""
    if isinstance(data, list):
        items = node.get("items")
        sub = _object_schema(items, root) if isinstance(items, dict) else None
        if sub is not None:
            for i, item in enumerate(data):
                yield from _walk_unknown(item, sub, root, (*path, i), True)
        return
    if not isinstance(data, dict):
        return
    known: dict[str, Any] = node.get("properties", {})
    extra = node.get("additionalProperties")
    for key, value in data.items():
        if key in known:
            sub = _object_schema(known[key], root)
        elif isinstance(extra, dict):
            sub = _object_schema(extra, root)  # a table of tables, e.g. [profiles.NAME]
        else:
            close = difflib.get_close_matches(key, list(known), n=1, cutoff=NEAR_MISS)
            if strict or close:
                yield (*path, key), key, close[0] if close else None
            continue
        if sub is not None:
            yield from _walk_unknown(value, sub, root, (*path, key), True)


def _unknown_keys(ctx: _Ctx) -> Iterator[Diagnostic]:
    from kvswitch.schema_check import schema

    root = schema(ctx.cf.kind)
    found = _walk_unknown(_owned(ctx.cf), root, root, (), kind_of(ctx.cf).strict_keys)
    for key_path, key, suggestion in found:
        if suggestion:
            message = tr("unknown key {key}; did you mean {suggestion}?").format(
                key=show(key), suggestion=repr(suggestion)
            )
        else:
            message = tr("unknown key {key} (kvswitch ignores it)").format(key=show(key))
        yield ctx.diag("KVS003", message, key_path, key=True)


def _duplicates(ctx: _Ctx) -> Iterator[Diagnostic]:
    doc = ctx.cf.doc
    for dup in getattr(doc, "duplicates", ()):
        if not kind_of(ctx.cf).owns_duplicate(dup.path):
            continue
        line, col = doc.line_col(dup.key_start)
        yield Diagnostic(
            "KVS004",
            Severity.WARNING,
            tr("key {key} appears more than once; the last one wins").format(key=show(dup.path[-1])),
            ctx.cf.path,
            line,
            col,
            dup.path,
        )


# -- the article's rules ---------------------------------------------------------------


def _subject_rules(ctx: _Ctx, s: Subject, bad: set[KeyPath]) -> Iterator[Diagnostic]:
    data = ctx.cf.data
    kind = get_kind(s.kind)
    if not kind.has_ours(data):
        return  # a plain VS Code settings file, say: nothing of ours to check

    def val(field: str) -> Any:
        path = s.fields.get(field)
        if path is None or path in bad:
            return MISSING
        return get_path(data, path)

    def at(field: str) -> KeyPath:
        return s.fields[field]

    where = tr("profile {name}: ").format(name=show(s.profile, NAME_MAX)) if s.profile is not None else ""
    mode = val("cache.mode")
    mode = mode if mode in ("merged", "split") else MISSING
    yield from _chunk_rules(ctx, s, val, at, mode, where)
    yield from _split_rules(ctx, s, val, at, mode, where)
    yield from _url_rules(ctx, s, val, at, where)
    yield from _key_rules(ctx, s, val, at, where)
    for code, message, path, on_key in kind.lint(ctx.cf, s, mode):
        yield ctx.diag(code, message, path, key=on_key)  # the kind's message, already in the user's language
    dtype = val("cache.kv_cache_dtype")
    if isinstance(dtype, str) and dtype not in KNOWN_KV_DTYPES:
        message = tr(
            "{where}kv_cache_dtype {value} is not a value any engine kvswitch knows accepts "
            "(auto, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2, int8, q8_0…)"
        )
        yield ctx.diag("KVS104", message.format(where=where, value=show(dtype)), at("cache.kv_cache_dtype"))
    elif dtype == "int8":
        message = tr(
            "{where}kv_cache_dtype int8: vLLM and SGLang have no plain int8 KV cache "
            "(use fp8 there; llama.cpp calls it q8_0)"
        )
        yield ctx.diag("KVS105", message.format(where=where), at("cache.kv_cache_dtype"))
    model = val("provider.model")
    if "provider.model" not in s.fields or (model is MISSING and not kind.requires_model):
        pass
    elif at("provider.model") in bad:
        pass  # a wrong type is KVS002 already, not a missing name
    elif model is MISSING or model is None or (isinstance(model, str) and not model.strip()):
        message = tr("{where}model name is missing; requests need a model id the provider lists")
        yield ctx.diag("KVS220", message.format(where=where), at("provider.model"))
    elif isinstance(model, str) and _MODEL_PLACEHOLDER.search(model):
        message = tr(
            "{where}model name {model} looks like a placeholder; a model id the provider does not "
            "list makes requests fail with 404"
        )
        yield ctx.diag("KVS220", message.format(where=where, model=show(model)), at("provider.model"))


def _chunk_rules(ctx: _Ctx, s: Subject, val: Any, at: Any, mode: Any, where: str) -> Iterator[Diagnostic]:
    chunk = val("cache.chunk_size")
    if isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 1:
        if chunk % 64:
            new = nearest_chunk_size(chunk)
            message = tr(
                "{where}chunk_size {chunk} is not a multiple of 64; it becomes {new} "
                "(some endpoints round it silently, so the size in effect is not the one written)"
            )
            yield ctx.diag(
                "KVS101",
                message.format(where=where, chunk=chunk, new=new),
                at("cache.chunk_size"),
                fix=Fix(at("cache.chunk_size"), new, tr("chunk_size {chunk} → {new}").format(chunk=chunk, new=new)),
            )
        if chunk < 256:
            message = tr(
                "{where}chunk_size {chunk} is below 256: every chunk re-reads the model weights and "
                "TTFT gets worse; 512–1024 suits most 7B models"
            )
            yield ctx.diag("KVS102", message.format(where=where, chunk=chunk), at("cache.chunk_size"))
    if get_kind(s.kind).keeps_both_modes:
        return  # a profile keeps both modes' settings on purpose
    if mode == "split" and chunk is not MISSING:
        yield ctx.diag(
            "KVS103",
            tr(
                "chunk_size is ignored in split mode (the prefill instance picks its own chunking); "
                "switch to merged for it to take effect"
            ),
            at("cache.chunk_size"),
            key=True,
        )


def _split_rules(ctx: _Ctx, s: Subject, val: Any, at: Any, mode: Any, where: str) -> Iterator[Diagnostic]:
    kind = get_kind(s.kind)
    in_split = mode == "split" and s.active
    urls = {}
    for field, label in (("split.prefill_base_url", "prefill"), ("split.decode_base_url", "decode")):
        url = val(field)
        # the endpoint's name for a message, in the user's language ("profile x: prefill endpoint")
        named = (tr("{where}prefill endpoint") if label == "prefill" else tr("{where}decode endpoint")).format(
            where=where
        )
        if url is MISSING or url is None:
            if in_split and kind.split_endpoints_expected(ctx.cf.data):
                # a kvswitch profile without endpoints uses its base_url for both
                if label == "prefill":
                    message = tr("{where}split mode without a prefill endpoint ({key})")
                else:
                    message = tr("{where}split mode without a decode endpoint ({key})")
                yield ctx.diag("KVS110", message.format(where=where, key=at(field)[-1]), at(field))
            continue
        if isinstance(url, str):
            problem = url_problem(url)
            if problem is not None and problem != query_problem():
                yield ctx.diag(
                    "KVS110",
                    tr("{label} {url} is not an http(s) URL: {problem}").format(
                        label=named, url=show(redact_url(url)), problem=problem
                    ),
                    at(field),
                    severity=Severity.ERROR if in_split else Severity.WARNING,
                )
            else:
                urls[label] = url
                yield from _slash_and_query(ctx, at(field), url, named)
    # a client file's split endpoints only matter in split mode (in merged mode CC Switch keeps an
    # inert [cache.split], S-16, and init writes it); a profile keeps both modes' settings on purpose
    if (in_split or kind.keeps_both_modes) and len(urls) == 2 and same_address(urls["prefill"], urls["decode"]):
        message = tr(
            "{where}prefill and decode endpoints are the same address: split needs a backend with a real "
            "prefill/decode deployment behind it, else split requests time out; with one instance use merged"
        )
        yield ctx.diag("KVS111", message.format(where=where), at("split.decode_base_url"))
    conc = val("split.max_transfer_concurrency")
    if isinstance(conc, int) and not isinstance(conc, bool):
        if conc < 1:
            message = tr("{where}max_transfer_concurrency {value} must be at least 1")
            yield ctx.diag(
                "KVS112",
                message.format(where=where, value=conc),
                at("split.max_transfer_concurrency"),
                severity=Severity.ERROR,
            )
        elif conc > 8:
            message = tr(
                "{where}max_transfer_concurrency {value} is above 8: transfers steal compute; "
                "4 is a stable start, 8 with a fast interconnect"
            )
            yield ctx.diag("KVS112", message.format(where=where, value=conc), at("split.max_transfer_concurrency"))


def _url_rules(ctx: _Ctx, s: Subject, val: Any, at: Any, where: str) -> Iterator[Diagnostic]:
    url = val("provider.base_url")
    if not isinstance(url, str):
        return
    problem = url_problem(url)
    label = tr("{where}base URL").format(where=where)
    if problem is not None and problem != query_problem():
        message = tr("{label} {url} is not an http(s) URL: {problem}")
        yield ctx.diag(
            "KVS202", message.format(label=label, url=show(redact_url(url)), problem=problem), at("provider.base_url")
        )
        return
    parts = urlsplit(url)
    yield from _slash_and_query(ctx, at("provider.base_url"), url, label)
    key = val("provider.api_key")
    has_key = isinstance(key, str) and key.strip() != ""
    if parts.scheme == "http" and has_key and not is_loopback_host(parts.hostname or ""):
        message = tr("{label} uses plain http to {host}, so the API key travels unencrypted; use https")
        yield ctx.diag("KVS203", message.format(label=label, host=parts.hostname), at("provider.base_url"))


def _slash_and_query(ctx: _Ctx, path: KeyPath, url: str, label: str) -> Iterator[Diagnostic]:
    parts = urlsplit(url)
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        message = tr("{label} {url} has a query string or fragment; write the bare address")
        yield ctx.diag("KVS202", message.format(label=label, url=show(redact_url(url))), path)
    elif url.endswith("/"):
        fixed = url.rstrip("/")
        message = tr("{label} ends with '/': clients join it into '//' and authentication breaks; it becomes {url}")
        yield ctx.diag(
            "KVS201",
            message.format(label=label, url=show(redact_url(fixed))),
            path,
            fix=Fix(path, fixed, tr("remove the trailing '/'")),
        )


def _key_rules(ctx: _Ctx, s: Subject, val: Any, at: Any, where: str) -> Iterator[Diagnostic]:
    if "provider.api_key" not in s.fields:
        return
    key = val("provider.api_key")
    path = at("provider.api_key")
    if not isinstance(key, str) or key == "":
        return
    if s.kind == CONFIG:
        if not is_key_reference(key):  # keyring, env:NAME, or none (sends no key)
            message = tr(
                "{where}'key' must be a reference, 'keyring', 'env:NAME' or 'none'; kvswitch's config "
                "never holds a plaintext key (store it with: kvswitch key set PROFILE)"
            )
            yield ctx.diag("KVS213", message.format(where=where), path)
        return
    if key != key.strip() or "\n" in key or "\r" in key:
        fixed = re.sub(r"\s+", "", key) if ("\n" in key.strip() or "\r" in key.strip()) else key.strip()
        fixed = _visible(fixed)
        yield ctx.diag(
            "KVS210",
            tr("API key has leading/trailing whitespace or a line break, which makes requests fail with 401"),
            path,
            fix=Fix(path, fixed, tr("strip whitespace and line breaks from the key")),
        )
    elif (hidden := invisible(key)) is not None:
        yield ctx.diag(
            "KVS210",
            tr(
                "API key contains {char}, an invisible or space character that breaks every "
                "request; it was probably pasted with the key"
            ).format(char=hidden),
            path,
            fix=Fix(path, _visible(key), tr("remove invisible and space characters from the key")),
        )
    elif not key.isascii():
        yield ctx.diag(
            "KVS210",
            tr(
                "API key contains a non-ASCII character: API keys are ASCII, so it was changed in "
                "copying; paste it again"
            ),
            path,
        )
    if looks_like_placeholder(key):
        message = tr(
            "API key is a placeholder, not a real key, so requests fail with 401; set it with: kvswitch key set PROFILE"
        )
        yield ctx.diag("KVS211", message, path)
    elif ctx.git and ctx.cf.path is not None and _git_tracked(ctx.cf.path):
        yield ctx.diag(
            "KVS212",
            tr(
                "plaintext API key in a file tracked by git: it would be committed; keep it in the OS keyring "
                "(kvswitch key set PROFILE) and remove it from the file"
            ),
            path,
        )


def _kvswitch_rules(ctx: _Ctx, bad: set[KeyPath]) -> Iterator[Diagnostic]:
    from kvswitch.literals import CONFIG_VERSION

    data = ctx.cf.data
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > CONFIG_VERSION:
        message = tr(
            "config version {version} was written by a newer kvswitch (this one reads up to "
            "{supported}); upgrade kvswitch"
        )
        yield ctx.diag("KVS005", message.format(version=version, supported=CONFIG_VERSION), ("version",))
    active = data.get("active_profile")
    profiles = data.get("profiles")
    if isinstance(active, str) and isinstance(profiles, dict) and active not in profiles:
        close = difflib.get_close_matches(active, list(profiles), n=1)
        if close:
            message = tr("active_profile {name} is not a profile; did you mean {suggestion}?")
        else:
            message = tr("active_profile {name} is not a profile")
        shown = show(active, NAME_MAX)
        yield ctx.diag(
            "KVS002", message.format(name=shown, suggestion=show(close[0]) if close else ""), ("active_profile",)
        )
    yield from _name_rules(ctx, profiles, data.get("clients"))
    yield from _client_kinds(ctx, data.get("clients"))
    yield from _mode_urls(ctx, profiles)


def _mode_urls(ctx: _Ctx, profiles: Any) -> Iterator[Diagnostic]:
    """KVS202/KVS201 for each profile's per-mode URLs, as for its base URL."""
    for name in profiles if isinstance(profiles, dict) else ():
        where = tr("profile {name}: ").format(name=show(name, NAME_MAX))
        for mode, key in (("merged", "url"), ("split", "url"), ("split", "probe_url")):
            path = ("profiles", name, mode, key)
            url = get_path(ctx.cf.data, path)
            if not isinstance(url, str):
                continue
            problem = url_problem(url)
            label = tr("{where}{mode} URL").format(where=where, mode=mode)
            if problem is not None and problem != query_problem():
                message = tr("{label} {url} is not an http(s) URL: {problem}")
                yield ctx.diag("KVS202", message.format(label=label, url=show(redact_url(url)), problem=problem), path)
            else:
                yield from _slash_and_query(ctx, path, url, label)


def _client_kinds(ctx: _Ctx, clients: Any) -> Iterator[Diagnostic]:
    """KVS002 for a registered client whose kind no registered kind answers to."""
    from kvswitch.kinds import choices, client_kind

    for i, entry in enumerate(clients if isinstance(clients, list) else ()):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if isinstance(kind, str):
            try:
                client_kind(kind)
            except ValueError:
                known = ", ".join(choices(clients_only=True))
                message = tr("clients.{index}.kind: no client kind {kind} (kinds: {known})")
                yield ctx.diag("KVS002", message.format(index=i, kind=show(kind), known=known), ("clients", i, "kind"))


def _name_rules(ctx: _Ctx, profiles: Any, clients: Any) -> Iterator[Diagnostic]:
    """KVS006: profile and client names kvswitch cannot show or pass around safely. Such a
    config still loads; the finding says how to rename."""
    for name in profiles if isinstance(profiles, dict) else ():
        problem = name_problem(name)
        if problem is not None:
            old = shell_word(name) if len(name) <= 200 else "OLD"
            message = tr("profile name {name} is not allowed: {problem}; rename it: kvswitch profile rename {old} NEW")
            yield ctx.diag(
                "KVS006",
                message.format(name=show(name, NAME_MAX), problem=problem, old=old),
                ("profiles", name),
                key=True,
            )
    for i, entry in enumerate(clients if isinstance(clients, list) else ()):
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and (problem := name_problem(name)) is not None:
            message = tr("client name {name} is not allowed: {problem}; change it in this file")
            yield ctx.diag("KVS006", message.format(name=show(name, NAME_MAX), problem=problem), ("clients", i, "name"))


# -- helpers -----------------------------------------------------------------------------


def _dotted(loc: KeyPath) -> str:
    """A key path for a message, each part shown safely."""
    return ".".join(str(p) if isinstance(p, int) or name_problem(p) is None else show(p, NAME_MAX) for p in loc)


def _visible(key: str) -> str:
    """``key`` without whitespace, control and format characters."""
    return "".join(c for c in key if invisible(c) is None)


def _git_tracked(path: Path) -> bool:
    """Whether git tracks ``path`` (staged or committed); False without git or a repository."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0
