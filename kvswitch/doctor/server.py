"""The checks that talk to the server: ``reachable``, ``url-convention``, ``auth``, ``model``
and ``split``, then ``prefix-cache`` (:mod:`kvswitch.doctor.prefix`). Paths are joined the way
clients join them, without normalising, so a trailing ``/`` on the base URL is reproduced."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from kvswitch.doctor.checks import KNOWN, MEASURING, Check, paren
from kvswitch.doctor.network import Answer, Net, refused, stalled
from kvswitch.doctor.prefix import prefix_check
from kvswitch.doctor.target import DoctorSettings, Target, clean_key, key_has_whitespace
from kvswitch.i18n import clauses, tr
from kvswitch.kinds.base import MODE_HEADER
from kvswitch.urls import api_paths, guess_convention, origin, redact_url, same_address

if TYPE_CHECKING:
    from kvswitch.probe.client import RequestResult

__all__ = ["network_checks"]


def _split_fix() -> str:
    return tr(
        "split needs two real instance groups; with one instance use merged: kvswitch switch merged. "
        "Two instance groups: a prefill and a decode deployment on their own GPUs, with a router in front"
    )


async def network_checks(t: Target, s: DoctorSettings) -> list[Check]:
    """``reachable`` to ``prefix-cache``, in order; after a failure that stops them, the rest are skipped."""
    from kvswitch.network import NetworkSettingsError, proxy_for
    from kvswitch.probe.transport import async_client

    out: list[Check] = []
    skip = s.skip

    def skipped(name: str, why: str, source: str = "") -> None:
        if name not in skip:
            out.append(Check(name, "skip", why, source=source))

    names = ("url-convention", "auth", "model", "split", "prefix-cache")
    async with async_client(timeout=s.timeout) as client:
        net = Net(client, t, s.timeout)
        # reachable ---------------------------------------------------------------------------
        reach = await net.get(t.base_url) if origin(t.base_url) else Answer(error=tr("not an http(s) URL"))
        try:
            proxy = proxy_for(t.base_url)
        except NetworkSettingsError:
            proxy = None  # the request itself failed and says why
        if reach.status is None:
            fix = (
                tr(
                    "start the server, or correct the address and port: kvswitch profile edit {profile} --base-url URL"
                ).format(profile=t.profile)
                if t.profile
                else tr("start the server, or correct the address and port")
            )
            fix = clauses(
                [
                    fix,
                    tr(
                        "check that no firewall or proxy is in the way (kvswitch honours HTTPS_PROXY, "
                        "HTTP_PROXY and NO_PROXY for addresses that are not this machine)"
                    ),
                ]
            )
            out.append(Check("reachable", "fail", f"GET {redact_url(t.base_url)}: {reach.describe()}", fix))
            for name in names:
                skipped(name, tr("the base URL is not reachable"))
            return out
        saw = tr("GET {url} answered HTTP {status} in {ms} ms").format(
            url=redact_url(t.base_url), status=reach.status, ms=f"{reach.ms:.0f}"
        )
        if proxy is not None:
            saw += paren(
                tr("through the proxy {proxy} from {variable}").format(proxy=proxy.shown, variable=proxy.variable)
            )
        out.append(Check("reachable", "pass", saw))
        # URL convention --------------------------------------------------------------------
        base = t.base_url  # joined as clients join it: a trailing '/' gives '//' (S-24)
        answers = {conv: await net.get(base + api_paths(conv)[0], t.key) for conv in ("append-v1", "includes-v1")}
        works = [c for c, a in answers.items() if a.models is not None]
        guessed = guess_convention(base)
        detected: str | None = None
        if len(works) == 1:
            detected = works[0]
            other = "includes-v1" if detected == "append-v1" else "append-v1"
            how = tr("{works} lists models, {fails} does not").format(
                works=redact_url(base + api_paths(detected)[0]), fails=redact_url(base + api_paths(other)[0])
            )
        elif len(works) == 2:
            detected = guessed
            how = tr(
                "both <base>/v1/models and <base>/models answer; going by the base URL's ending: {convention}"
            ).format(convention=detected)
        else:
            how = tr("neither <base>/v1/models nor <base>/models lists models ({answers})").format(
                answers=", ".join(f"{c}: {a.describe()}" for c, a in answers.items())
            )
        if "url-convention" not in skip:
            denied = all(a.refused or a.status in (401, 403) for a in answers.values())
            out.append(_convention_check(t, detected, how, ambiguous=len(works) == 2, denied=denied))
        convention = detected or t.url_convention or guessed
        models_path, chat_path = api_paths(convention)
        listing = answers[convention]
        # auth and model -------------------------------------------------------------------
        chat = await net.chat(base + chat_path, t.model, "Say OK.", t.key)
        auth = await _auth_check(net, t, listing, chat, models_path, chat_path)
        if "auth" not in skip:
            out.append(auth)
        if auth.status == "fail":
            for name in ("model", "split", "prefix-cache"):
                skipped(name, tr("the server refused the request (see auth)"))
            return out
        model = _model_check(t, listing, chat, base + chat_path)
        if "model" not in skip:
            out.append(model)
        # split ----------------------------------------------------------------------------
        if "split" not in skip:
            out.append(await _split_check(net, t, convention))
        # prefix cache --------------------------------------------------------------------
        if "prefix-cache" not in skip:
            if model.status == "fail":
                skipped("prefix-cache", tr("the model check failed, so no request can be timed"), MEASURING)
            else:
                out.append(await prefix_check(net, t, s, base + chat_path))
    return out


def _convention_check(t: Target, detected: str | None, how: str, *, ambiguous: bool, denied: bool) -> Check:
    if detected is None and denied:
        return Check(
            "url-convention",
            "skip",
            tr("the server refused both model-list requests, so the convention cannot be told (see auth)"),
        )
    if detected is None:
        return Check(
            "url-convention",
            "skip",
            clauses([how, tr("the convention cannot be told from here")]),
            tr("a base ending in /v1 takes includes-v1, a gateway base like https://host/api takes append-v1"),
        )
    if t.url_convention is None:
        return Check(
            "url-convention",
            "pass",
            tr("{how} → {convention} (for kvswitch probe: --url-convention {convention})").format(
                how=how, convention=detected
            ),
        )
    if t.url_convention == detected:
        return Check(
            "url-convention",
            "pass",
            clauses([how, tr("the profile says {convention}: they agree").format(convention=t.url_convention)]),
        )
    saw = clauses(
        [
            how,
            tr("the profile says {convention}").format(convention=t.url_convention),
            tr("clients would call {url}").format(url=redact_url(t.base_url + api_paths(t.url_convention)[1])),
        ]
    )
    if ambiguous:
        saw += paren(tr("a lenient server answers both; a strict one would not"))
    return Check("url-convention", "warn", saw, f"kvswitch profile edit {t.profile} --url-convention {detected}")


async def _auth_check(
    net: Net, t: Target, listing: Answer, chat: RequestResult, models_path: str, chat_path: str
) -> Check:
    key = t.key
    denied_chat = chat.status in (401, 403) or refused(chat)
    denied_list = listing.status in (401, 403) or listing.refused
    rate = chat.status == 429 or listing.status == 429
    key_ws = key_has_whitespace(key)
    slash = t.base_url.endswith("/")
    if not denied_chat and not denied_list:
        if rate:
            return Check(
                "auth",
                "warn",
                tr("the server accepted the request but answered 429 (rate limited or out of quota)"),
                tr("check the key's status and quota with the provider"),
                KNOWN,
            )
        if key:
            what = tr("the server accepted the request with the key")
        elif t.key_note:
            what = tr("the server accepted the request without a key ({reason})").format(reason=t.key_note)
        else:
            what = tr("the server accepted the request without a key")
        if key_ws:
            return Check(
                "auth",
                "warn",
                clauses(
                    [
                        what,
                        tr(
                            "but the key has whitespace or a line break (KVS210): other clients will send it as it is "
                            "and get "
                            "401"
                        ),
                    ]
                ),
                _key_fix(t),
                KNOWN,
            )
        return Check(
            "auth",
            "pass",
            what
            + paren(
                clauses(
                    [
                        f"GET …{models_path}: {listing.describe()}",
                        f"POST …{chat_path}: " + ("HTTP 200" if chat.ok else str(chat.error)),
                    ]
                )
            ),
        )
    seen = (
        f"POST {redact_url(t.base_url + chat_path)}: {chat.error}"
        if denied_chat
        else f"GET {redact_url(t.base_url + models_path)}: {listing.describe()}"
    )
    saw = [seen]
    fixes = []
    if key is None:
        saw.append(tr("no key was sent: {reason}").format(reason=t.key_note or tr("none is set")))
        fixes.append(
            tr("set the key: kvswitch key set {profile}").format(profile=t.profile)
            if t.profile
            else tr("give --api-key-env NAME")
        )
    if key_ws:
        saw.append(tr("the key has leading/trailing whitespace or a line break (KVS210)"))
        fixes.append(_key_fix(t))
    if slash:
        saw.append(
            tr("the base URL ends with '/', so clients join it into a path with '//', which breaks auth (KVS201)")
        )
        fixed_url = t.base_url.rstrip("/")
        command = (
            f"kvswitch profile edit {t.profile} --base-url {fixed_url}" if t.profile else f"--base-url {fixed_url}"
        )
        fixes.append(tr("remove the trailing slash: {command} (or kvswitch lint --fix)").format(command=command))
    if key_ws or slash:
        retry_base = t.base_url.rstrip("/") if slash else t.base_url
        retry_key = clean_key(key) if key is not None and key_ws else key
        again = await net.get(retry_base + models_path, retry_key)
        accepted = again.status == 200
        if again.status == 404:
            r2 = await net.chat(retry_base + chat_path, t.model, "Say OK.", retry_key)
            accepted = r2.status not in (None, 401, 403) and not refused(r2)
        if key_ws and slash:
            saw.append(
                tr(
                    "with the whitespace removed from the key and the trailing '/' removed the server accepts "
                    "the request"
                )
                if accepted
                else tr(
                    "with the whitespace removed from the key and the trailing '/' removed the server still refuses it"
                )
            )
        elif key_ws:
            saw.append(
                tr("with the whitespace removed from the key the server accepts the request")
                if accepted
                else tr("with the whitespace removed from the key the server still refuses it")
            )
        else:
            saw.append(
                tr("with the trailing '/' removed the server accepts the request")
                if accepted
                else tr("with the trailing '/' removed the server still refuses it")
            )
    last = tr(
        "if that is not it: check the key's status and quota with the provider first, and that it is this "
        "gateway's or instance's key"
    )
    if t.key_ref and t.key_ref.startswith("env:"):
        last = clauses([last, tr("then set ${name} to the right key").format(name=t.key_ref.removeprefix("env:"))])
    elif t.profile:
        last = clauses([last, tr("then store it: kvswitch key set {profile}").format(profile=t.profile)])
    fixes.append(last)
    return Check("auth", "fail", clauses(saw), clauses(fixes), KNOWN)


def _key_fix(t: Target) -> str:
    if t.key_ref and t.key_ref.startswith("env:"):
        return tr("fix ${name}: no whitespace or line breaks around or inside the key").format(
            name=t.key_ref.removeprefix("env:")
        )
    if t.profile:
        return tr(
            "paste the key again without whitespace or line breaks: kvswitch key set {profile} "
            "(for an env:NAME key, fix the variable's value)"
        ).format(profile=t.profile)
    return tr("fix the environment variable's value: no whitespace or line breaks in the key")


def _model_check(t: Target, listing: Answer, chat: RequestResult, chat_url: str) -> Check:
    ids = listing.models
    listed = ids is not None and t.model in ids
    ctx = _context_length(listing, t.model)
    shown_ids = ""
    if ids:
        close = difflib.get_close_matches(t.model, ids, n=3, cutoff=0.3)
        names = ", ".join(close or ids[:5])
        shown_ids = (tr("similar ids: {ids}") if close else tr("it lists: {ids}")).format(ids=names)
        if len(ids) > len(close or ids[:5]):
            shown_ids += paren(tr("{count} in all").format(count=len(ids)))
    name = t.profile or "PROFILE"
    model = repr(t.model)
    fix = (
        tr("use an id the server lists: kvswitch profile edit {profile} --model ID").format(profile=t.profile)
        if t.profile
        else tr("use an id the server lists (--model ID)")
    )
    if chat.ok:
        if ids is None:
            return Check(
                "model",
                "pass",
                clauses([tr("{model} answers a chat request; the server has no model list").format(model=model), *ctx]),
                source=KNOWN,
            )
        if not listed:
            return Check(
                "model",
                "warn",
                clauses(
                    [
                        tr("{model} answers but is not in the server's model list (an alias?)").format(model=model),
                        shown_ids,
                    ]
                ),
                fix,
                KNOWN,
            )
        return Check(
            "model",
            "pass",
            clauses(
                [
                    tr("{model} is listed and answers (TTFT {ms} ms)").format(
                        model=model, ms=f"{(chat.ttft or 0) * 1000:.0f}"
                    ),
                    *ctx,
                ]
            ),
            source=KNOWN,
        )
    where = f"POST {redact_url(chat_url)}: {chat.error}"
    if ids is None and chat.status == 404:
        return Check(
            "model",
            "fail",
            clauses(
                [
                    where,
                    tr(
                        "the server has no model list to compare with, so either the model id {model} or the path is "
                        "wrong"
                    ).format(model=model),
                ]
            ),
            tr(
                "check the id against the provider's model list and the URL convention: kvswitch profile edit "
                "{profile} --url-convention append-v1|includes-v1"
            ).format(profile=name),
            KNOWN,
        )
    if chat.status == 404 or (ids is not None and not listed):
        return Check(
            "model",
            "fail",
            clauses([where, tr("{model} is not in the server's model list").format(model=model), shown_ids]),
            clauses([fix, tr("check the context length there too")]),
            KNOWN,
        )
    return Check(
        "model",
        "fail",
        tr("{model} is listed, but a one-token chat request failed: {error}").format(model=model, error=chat.error),
        tr("see the server's log for the cause"),
        KNOWN,
    )


def _context_length(listing: Answer, model: str) -> list[str]:
    """``["context length N"]`` when the model list says, else nothing."""
    if not isinstance(listing.data, dict) or not isinstance(listing.data.get("data"), list):
        return []
    for m in listing.data["data"]:
        if isinstance(m, dict) and m.get("id") == model:
            for k in ("max_model_len", "context_length", "context_window", "max_context_length"):
                if isinstance(m.get(k), int):
                    return [tr("context length {tokens}").format(tokens=m[k])]
    return []


async def _split_check(net: Net, t: Target, convention: str) -> Check:
    own_url = t.split_url is not None and t.split_url != t.base_url
    has_endpoints = own_url or (
        t.prefill is not None and t.decode is not None and not (t.prefill == t.decode == t.base_url)
    )
    if t.mode != "split":
        saw = tr("mode is {mode}: no split request sent").format(mode=t.mode)
        if has_endpoints:
            saw += paren(tr("the profile has split endpoints; check them with --mode split"))
        return Check("split", "skip", saw, source=KNOWN)
    prefill, decode = t.prefill or t.base_url, t.decode or t.base_url
    unreachable = []
    for label, url in (
        (tr("prefill endpoint {url}: {problem}"), prefill),
        (tr("decode endpoint {url}: {problem}"), decode),
    ):
        if url == t.base_url:
            continue
        answer = await net.get(url)
        if answer.status is None:
            unreachable.append(label.format(url=redact_url(url), problem=answer.describe()))
    profile = t.profile or "PROFILE"
    if unreachable:
        return Check(
            "split",
            "fail",
            clauses(unreachable),
            tr(
                "start the instance or correct its address: kvswitch profile edit {profile} "
                "--prefill-base-url URL --decode-base-url URL"
            ).format(profile=profile),
            KNOWN,
        )
    same = same_address(prefill, decode)
    route_base = t.split_url or t.base_url
    url = route_base + api_paths(convention)[1]
    headers = {MODE_HEADER: "split"} if t.split_header else {}
    how = (
        tr("the profile's split URL")
        if own_url
        else tr("the base URL with {header}: split").format(header=MODE_HEADER)
        if t.split_header
        else tr("the base URL")
    )
    result = await net.chat(url, t.model, "Say OK.", t.key, headers)
    where = (
        tr("prefill and decode are the same address ({url})").format(url=redact_url(prefill))
        if same
        else tr("prefill {prefill}, decode {decode}").format(prefill=redact_url(prefill), decode=redact_url(decode))
    )
    if stalled(result):
        return Check(
            "split",
            "fail",
            clauses(
                [
                    where,
                    tr("a split request to {how} ({url}) stalled ({error}): the KV hand-off hangs").format(
                        how=how, url=redact_url(url), error=result.error
                    ),
                ]
            ),
            _split_fix(),
            KNOWN,
        )
    if not result.ok:
        return Check(
            "split",
            "fail",
            clauses([where, tr("a split request to {how} failed: {error}").format(how=how, error=result.error)]),
            _split_fix(),
            KNOWN,
        )
    if same:
        return Check(
            "split",
            "warn",
            clauses(
                [
                    where,
                    tr(
                        "a split request to {how} answered, so something behind that address handles split — unless "
                        "it is a "
                        "real prefill/decode deployment, split requests time out (KVS111)"
                    ).format(how=how),
                ]
            ),
            tr(
                "give the prefill and decode instances their own addresses: kvswitch profile edit {profile} "
                "--prefill-base-url URL --decode-base-url URL; with one instance use merged"
            ).format(profile=profile),
            KNOWN,
        )
    return Check(
        "split",
        "pass",
        clauses(
            [
                where,
                tr("distinct and reachable; a split request to {how} answered (TTFT {ms} ms)").format(
                    how=how, ms=f"{(result.ttft or 0) * 1000:.0f}"
                ),
            ]
        ),
        source=KNOWN,
    )
