"""The gateway's ``auto`` route: merged or split per request, from the new prompt tokens it brings.

A long new prompt goes split (its prefill then does not stall everyone else's decode), a short
one merged (no extra hop, no KV transfer); under heavy load the bar is lower. "New" means past
the longest run of leading messages the request shares with its conversation's previous one:
those are in the upstream's prefix cache already.

A conversation is named by a 16-byte blake2b of its system prompt and first user message, in each
API's body shape: Chat Completions ``messages``, Completions ``prompt`` (its first 2,048
characters), Responses ``instructions`` + ``input``, Anthropic Messages ``system`` +
``messages``. Only text is read: images and other binary parts weigh nothing. Per conversation
the decider keeps the digest of each message (never its text) and the previous request's size,
in characters and, once the gateway reports its reply's ``usage``, in tokens (which calibrates
characters to tokens).

Sticky (the default): a conversation stays merged while its turns are short; its first split
decision keeps it split until :meth:`AutoDecider.reset` (a mode switch), since a flip loses the
prefix cache. So a conversation flips at most once. A Responses conversation held upstream
(``previous_response_id``, ``conversation``) never moves: the other upstream lacks its state.

Pure logic, called once per request on the event loop: no I/O, and each request's text is
walked and hashed once. A body it cannot read is merged with the reason ``unparsed``.
"""

from __future__ import annotations

import json
import math
from array import array
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, Literal

from kvswitch.errors import KvswitchError
from kvswitch.literals import CacheMode

if TYPE_CHECKING:
    from kvswitch.models.kvswitch_config import AutoRoute

__all__ = [
    "MAX_CONVERSATIONS",
    "AutoDecider",
    "Decision",
    "Estimate",
    "Why",
    "prompt_tokens",
]

Why = Literal["new-tokens", "load", "short", "sticky", "unparsed"]
"""Why a request went where it went (the metric's ``reason`` label)."""
Estimate = Literal["usage", "chars/4"]
"""How new tokens were counted: characters calibrated by the previous reply's ``usage``, or
characters / 4."""

MAX_CONVERSATIONS = 4096
"""Conversations remembered; the least recently seen is forgotten first."""
MAX_DIGESTS = 1 << 18
"""Message digests remembered over all conversations (8 bytes each: 2 MiB)."""
MAX_ITEMS = 10_000
"""Messages (or prompt blocks) in one request past which it is not read."""
MAX_NODES = 250_000
"""JSON values walked in one request past which it is not read."""
MAX_DEPTH = 32
"""Nesting below which values are not read (their text weighs nothing)."""
BLOCK_CHARS = 2048
"""A Completions prompt is compared in blocks of this many characters (the first is its identity)."""
BLOCK_TOKENS = 512
"""…or of this many token ids."""
CALIBRATE_FROM_CHARS = 256
"""A reply's ``usage`` calibrates characters to tokens from a prompt of this many characters
(below it the chat template's own tokens would dominate)."""
RATE_BOUNDS = (1 / 8, 1.5)
"""Tokens per character a calibration may give (images in a prompt weigh tokens, not characters)."""
_SKIP = frozenset(
    {
        "type",
        "cache_control",
        "signature",
        "encrypted_content",
        "image_url",
        "image",
        "source",
        "data",
        "file_data",
        "file_id",
        "input_audio",
        "audio",
        "b64_json",
    }
)
"""Keys whose values are not prompt text: markers that move between turns, and binary parts."""
_SYSTEM = ("system", "developer")
_END = "\x1d"  # closes an object or a list in a message's strings
_MASK = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class Decision:
    """Where one request goes and why. ``conversation`` is the first 12 hex digits of its
    conversation's id (empty when the body could not be read)."""

    mode: CacheMode
    reason: Why
    new_tokens: int
    estimate: Estimate
    conversation: str
    key: bytes = field(default=b"", repr=False)
    seq: int = field(default=0, repr=False)

    def mode_header(self) -> str:
        """The ``X-KVSwitch-Mode`` reply text: ``split; reason=auto; why=new-tokens; new=2310;
        est=usage`` (``est``: how the new tokens were counted, ``usage`` or ``chars/4``)."""
        return f"{self.mode}; reason=auto; why={self.reason}; new={self.new_tokens}; est={self.estimate}"


class _Unread(KvswitchError):
    """The body is not one the decider reads (caught inside :meth:`AutoDecider.decide`)."""

    def __init__(self) -> None:
        super().__init__("not a body the decider reads")


class _Conversation:
    __slots__ = ("chars", "digests", "pinned", "route", "seq", "tokens")

    def __init__(self) -> None:
        self.digests = b""  # the previous request's per-message digests, 8 bytes each
        self.chars = 0  # its text, in characters
        self.tokens: int | None = None  # its prompt tokens, from its reply's usage
        self.route: CacheMode | None = None
        self.pinned = False  # its state lives upstream (Responses): it never moves
        self.seq = 0


class _Walk:
    """One request's text, message by message, with a budget of JSON values."""

    __slots__ = ("budget",)

    def __init__(self) -> None:
        self.budget = MAX_NODES

    def element(self, value: Any, *, keys: bool = False) -> tuple[bytes, int, list[str]]:
        """One message's digest, its length in characters and its strings."""
        parts: list[str] = []
        chars = self._feed(value, parts, 0, keys)
        if self.budget < 0:
            raise _Unread
        return _digest(parts), chars, parts

    def _feed(self, value: Any, parts: list[str], depth: int, keys: bool) -> int:
        """Append ``value``'s strings to ``parts``; their length in characters. Strings inside a
        list or an object are handled in the loop (most of a prompt is), not by a call each."""
        self.budget -= 1
        if self.budget < 0:
            raise _Unread
        if isinstance(value, str):
            parts.append(value)
            return len(value)
        if depth >= MAX_DEPTH:
            return 0
        chars = 0
        if isinstance(value, list | dict):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            named = keys and isinstance(value, dict)
            for k, item in items:
                if k in _SKIP:
                    continue
                if named:
                    chars += self._feed(k, parts, depth + 1, keys)
                if type(item) is str:
                    self.budget -= 1
                    parts.append(item)
                    chars += len(item)
                else:
                    chars += self._feed(item, parts, depth + 1, keys)
            parts.append(_END)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            text = repr(value)
            parts.append(text)
            chars = len(text)
        return chars


def _digest(parts: Any) -> bytes:
    """A message's digest: 8 bytes of Python's own string hash, several times faster than
    blake2b and enough to tell two messages apart (a collision only miscounts new tokens)."""
    return (hash(tuple(parts)) & _MASK).to_bytes(8, "little")


class _Request:
    """A request as the decider sees it: its conversation's id and each message's digest."""

    __slots__ = ("chain", "chars", "digests", "key", "lead")

    def __init__(self, key: bytes, digests: list[bytes], chars: list[int], lead: int = 0, chain: bool = False) -> None:
        self.key = key
        self.digests = digests
        self.chars = chars  # per message
        self.lead = lead  # how many of them are tools and system prompt, before the messages
        self.chain = chain  # a Responses request continuing a conversation held upstream


def _messages(walk: _Walk, lead: list[tuple[Any, str, bool]], messages: Any) -> _Request:
    """Chat Completions, Anthropic Messages and Responses: ``lead`` (tools, system) then the
    messages. The conversation's id is a blake2b of the leading system messages and the first
    user message (else the first message)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or len(messages) > MAX_ITEMS or not (messages or lead):
        raise _Unread
    digests: list[bytes] = []
    chars: list[int] = []
    identity = blake2b(digest_size=16, person=b"kvswitch-conv")
    user: bool = False
    other: list[str] | None = None
    for n, value in enumerate([*lead, *messages]):
        if n < len(lead):
            value, role, keys = value
        else:
            said = value.get("role") if isinstance(value, dict) else None
            role, keys = said if isinstance(said, str) else "", False
        digest, size, parts = walk.element(value, keys=keys)
        digests.append(digest)
        chars.append(size)
        if user or role == "tools":
            continue
        if role == "user" or role in _SYSTEM:
            _feed_identity(identity, parts)
            user = role == "user"
        elif other is None:
            other = parts
    if not user and other is not None:
        _feed_identity(identity, other)
    return _Request(identity.digest(), digests, chars, len(lead))


def _feed_identity(h: Any, parts: list[str]) -> None:
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\x1f")


def _tools(body: Mapping[str, Any]) -> list[tuple[Any, str, bool]]:
    tools = body.get("tools")
    return [(tools, "tools", True)] if tools else []


def _chat(walk: _Walk, body: Mapping[str, Any]) -> _Request:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Unread
    return _messages(walk, _tools(body), messages)


def _anthropic(walk: _Walk, body: Mapping[str, Any]) -> _Request:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Unread
    system = body.get("system")
    lead = _tools(body) + ([(system, "system", False)] if system else [])
    return _messages(walk, lead, messages)


def _responses(walk: _Walk, body: Mapping[str, Any], known: Mapping[str, bytes]) -> _Request:
    items = body.get("input")
    if not isinstance(items, str | list):
        raise _Unread
    instructions = body.get("instructions")
    lead = _tools(body) + ([(instructions, "system", False)] if instructions else [])
    upstream = body.get("conversation")
    if isinstance(upstream, dict):
        upstream = upstream.get("id")
    previous = body.get("previous_response_id")
    if isinstance(upstream, str) and upstream:
        key = _held(upstream)
    elif isinstance(previous, str) and previous:
        key = known.get(previous) or _held(previous)
    else:
        return _messages(walk, lead, items)
    held = _messages(walk, lead, items) if items else _Request(key, [], [])
    return _Request(key, held.digests, held.chars, held.lead, chain=True)


def _held(name: str) -> bytes:
    """The id of a conversation whose state the upstream holds, from its name there."""
    return blake2b(name.encode("utf-8", "surrogatepass"), digest_size=16, person=b"kvswitch-held").digest()


def _completions(body: Mapping[str, Any]) -> _Request:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt[:MAX_ITEMS]):
        prompt = "\x00".join(prompt)  # a batch: its prompts one after another
    if isinstance(prompt, str):
        if len(prompt) > MAX_ITEMS * BLOCK_CHARS:
            raise _Unread
        blocks: list[Any] = [prompt[i : i + BLOCK_CHARS] for i in range(0, max(len(prompt), 1), BLOCK_CHARS)]
        chars = [len(block) for block in blocks]
        first = blocks[0].encode("utf-8", "surrogatepass")
    elif isinstance(prompt, list) and prompt:
        ids: list[Any] = prompt
        if isinstance(prompt[0], list):  # a batch of token id lists: one after another
            ids = []
            for seq in prompt:
                if not isinstance(seq, list) or len(ids) + len(seq) > MAX_NODES:
                    raise _Unread
                ids += seq
                ids.append(-1)
        if len(ids) > MAX_NODES:
            raise _Unread
        starts = range(0, len(ids), BLOCK_TOKENS)
        try:
            blocks = [array("q", ids[i : i + BLOCK_TOKENS]).tobytes() for i in starts]
        except (TypeError, OverflowError):
            raise _Unread from None
        chars = [4 * len(ids[i : i + BLOCK_TOKENS]) for i in starts]  # so that chars/4 is one per token id
        first = blocks[0]
    else:
        raise _Unread
    digests = [_digest((b,)) for b in blocks]
    key = blake2b(first, digest_size=16, person=b"kvswitch-conv").digest()
    return _Request(key, digests, chars)


def prompt_tokens(usage: Any) -> int | None:
    """A reply's prompt tokens from its ``usage``, in any of the four APIs' shapes (Anthropic's
    ``input_tokens`` leave out the cached ones: they are added back)."""
    if not isinstance(usage, Mapping):
        return None

    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    total = count("prompt_tokens") or (
        count("input_tokens") + count("cache_read_input_tokens") + count("cache_creation_input_tokens")
    )
    return total or None


class AutoDecider:
    """Decides each ``auto`` request's mode and tallies the decisions by (requested, served,
    reason) for ``kvswitch_gateway_mode_decisions_total``."""

    def __init__(
        self,
        settings: AutoRoute | None = None,
        *,
        max_conversations: int = MAX_CONVERSATIONS,
        max_digests: int = MAX_DIGESTS,
    ) -> None:
        self._conversations: OrderedDict[bytes, _Conversation] = OrderedDict()
        self._responses: OrderedDict[str, bytes] = OrderedDict()  # response id → conversation
        self._max = max_conversations
        self._max_digests = max_digests
        self._stored = 0
        self._seq = 0  # numbers every remembered request, so a late usage finds its own
        self.tally: Counter[tuple[str, str, str]] = Counter()
        """Decisions so far by (requested, served, reason); read it, do not change it."""
        self.configure(settings)

    def configure(self, settings: AutoRoute | None) -> None:
        """Take new thresholds (a profile change); what is remembered stays."""
        if settings is None:
            from kvswitch.models.kvswitch_config import AutoRoute

            settings = AutoRoute()
        self.settings = settings
        self._split_from = settings.split_from_tokens
        self._busy = settings.busy_in_flight
        self._busy_split_from = settings.busy_split_from_tokens
        self._sticky = settings.sticky

    def __len__(self) -> int:
        """Conversations remembered."""
        return len(self._conversations)

    def decide(self, api: str, body: Any, in_flight: int, *, requested: str = "auto", record: bool = True) -> Decision:
        """Where a request of ``api`` (``chat``, ``completions``, ``responses``, ``messages``) with
        ``body`` (its bytes, or the parsed JSON object) goes while ``in_flight`` requests are
        being served, this one included. ``requested`` is the tally's first label. With
        ``record=False`` (a token count, not a generation) nothing is remembered or tallied."""
        try:
            request = self._read(api, body)
        except (_Unread, ValueError, TypeError, RecursionError, OverflowError):
            request = None
        if request is None:
            decision = Decision("merged", "unparsed", 0, "chars/4", "")
        else:
            decision = self._decide(request, in_flight, record)
        if record:
            self.tally[(requested, decision.mode, decision.reason)] += 1
        return decision

    def note_usage(self, decision: Decision, usage: Any, response_id: str | None = None) -> bool:
        """Tell the decider a reply's ``usage`` (and a Responses reply's id, so a request that
        continues it finds its conversation). False when the conversation has moved on since
        (or is forgotten): the usage is then ignored."""
        if not decision.key:
            return False
        if isinstance(response_id, str) and 0 < len(response_id) <= 256:
            self._responses[response_id] = decision.key
            self._responses.move_to_end(response_id)
            while len(self._responses) > self._max:
                self._responses.popitem(last=False)
        conversation = self._conversations.get(decision.key)
        tokens = prompt_tokens(usage)
        if conversation is None or conversation.seq != decision.seq or tokens is None:
            return False
        conversation.tokens = tokens
        return True

    def reset(self) -> None:
        """Let every conversation decide again (the user switched modes). Those whose state is
        held upstream keep theirs."""
        for conversation in self._conversations.values():
            if not conversation.pinned:
                conversation.route = None

    def _read(self, api: str, body: Any) -> _Request | None:
        if isinstance(body, bytes | bytearray | memoryview | str):
            body = json.loads(bytes(body) if isinstance(body, memoryview) else body)
        if not isinstance(body, Mapping):
            return None
        walk = _Walk()
        if api == "chat":
            return _chat(walk, body)
        if api == "messages":
            return _anthropic(walk, body)
        if api == "responses":
            return _responses(walk, body, self._responses)
        if api == "completions":
            return _completions(body)
        return None

    def _decide(self, request: _Request, in_flight: int, record: bool) -> Decision:
        conversation = self._conversations.get(request.key)
        digests = b"".join(request.digests)
        total = sum(request.chars)
        shared = 0
        estimate: Estimate = "chars/4"
        rate = 0.25
        if conversation is not None:
            before = conversation.digests
            if request.chain:  # the upstream holds what came before, and the same tools and
                # instructions are in its prefix cache: only this request's input is new
                lead = sum(request.chars[: request.lead])
                shared, total = conversation.chars + lead, conversation.chars + total
                digests = before + digests
            else:
                for i, digest in enumerate(request.digests):
                    if before[8 * i : 8 * i + 8] != digest:
                        break
                    shared += request.chars[i]
                if conversation.tokens is not None and conversation.chars >= CALIBRATE_FROM_CHARS:
                    low, high = RATE_BOUNDS
                    rate = min(max(conversation.tokens / conversation.chars, low), high)
                    estimate = "usage"
        new_tokens = math.ceil((total - shared) * rate)
        mode: CacheMode
        reason: Why
        if new_tokens >= self._split_from:
            mode, reason = "split", "new-tokens"
        elif in_flight >= self._busy and new_tokens >= self._busy_split_from:
            mode, reason = "split", "load"
        else:
            mode, reason = "merged", "short"
        if conversation is not None:
            held = conversation.route
            keep = conversation.pinned or request.chain or (self._sticky and held == "split")
            if held is not None and held != mode and keep:
                mode, reason = held, "sticky"
        seq = 0
        if record:
            if conversation is None:
                conversation = self._conversations[request.key] = _Conversation()
            else:
                self._conversations.move_to_end(request.key)
            self._stored += (len(digests) - len(conversation.digests)) // 8
            conversation.digests, conversation.chars, conversation.tokens = digests, total, None
            conversation.route = mode
            conversation.pinned = conversation.pinned or request.chain
            self._seq += 1
            conversation.seq = seq = self._seq
            self._evict()
        return Decision(mode, reason, new_tokens, estimate, request.key.hex()[:12], request.key, seq)

    def _evict(self) -> None:
        while len(self._conversations) > 1 and (
            len(self._conversations) > self._max or self._stored > self._max_digests
        ):
            _, gone = self._conversations.popitem(last=False)
            self._stored -= len(gone.digests) // 8
