"""API translation through the gateway, on the real peers: the lab router's split path serves
Chat Completions only, so a Messages request sent there is answered 404 once, then translated;
the split pair's hand-off counter proves where it ran. llama.cpp (the merged upstream) serves
Messages and Responses itself: those pass through untranslated."""

from __future__ import annotations

import anthropic
import pytest

from kvswitch.gateway.server import REPLY_HEADER
from kvswitch.gateway.translating import TRANSLATED_HEADER
from tests.gateway.conftest import MODEL, TOKEN, Peers, ant, handoffs, oai

PROMPT = "one two three four five six seven eight nine ten eleven twelve"


def test_anthropic_sdk_reaches_the_split_pair_through_translation(peers: Peers) -> None:
    gateway = peers.start_gateway(peers.settings())
    try:
        before = handoffs(peers)
        with ant(f"{gateway.url}/split") as split:
            raw = split.messages.with_raw_response.create(
                model=MODEL, max_tokens=6, messages=[{"role": "user", "content": PROMPT}]
            )
            message = raw.parse()
            assert raw.headers[REPLY_HEADER] == "split; reason=path"
            assert raw.headers[TRANSLATED_HEADER].startswith("chat")
            assert message.type == "message" and message.content[0].type == "text"
            assert message.content[0].text and message.stop_reason == "max_tokens"
            assert message.usage.output_tokens == 6

            with split.messages.stream(
                model=MODEL, max_tokens=6, messages=[{"role": "user", "content": PROMPT}]
            ) as stream:
                kinds = [event.type for event in stream]
                final = stream.get_final_message()
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert "content_block_delta" in kinds
        assert final.content[0].type == "text" and final.content[0].text
        assert final.stop_reason == "max_tokens"
        assert handoffs(peers) - before == 2  # both ran on the split pair, with a KV hand-off
    finally:
        peers.stop_gateway(gateway)


def test_merged_messages_pass_through_untranslated(peers: Peers) -> None:
    gateway = peers.start_gateway(peers.settings())
    try:
        with ant(gateway.url) as merged:
            raw = merged.messages.with_raw_response.create(
                model=MODEL, max_tokens=4, messages=[{"role": "user", "content": PROMPT}]
            )
        assert raw.headers[REPLY_HEADER] == "merged; reason=default"
        assert TRANSLATED_HEADER not in raw.headers
        assert raw.parse().content[0].text
    finally:
        peers.stop_gateway(gateway)


def test_what_cannot_be_carried_is_refused_naming_it(peers: Peers) -> None:
    gateway = peers.start_gateway(peers.settings(translate="always"))
    try:
        before = handoffs(peers)
        document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a text"}}
        with ant(f"{gateway.url}/split") as split, pytest.raises(anthropic.BadRequestError) as info:
            split.messages.create(
                model=MODEL,
                max_tokens=4,
                messages=[{"role": "user", "content": [document, {"type": "text", "text": PROMPT}]}],
            )
        body = info.value.response.json()
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert "messages[0].content[0]" in body["error"]["message"]
        assert "document" in body["error"]["message"]
        assert TOKEN not in info.value.response.text
        assert handoffs(peers) == before  # nothing was sent upstream
    finally:
        peers.stop_gateway(gateway)


def test_count_tokens_on_a_chat_only_upstream_is_an_estimate(peers: Peers) -> None:
    gateway = peers.start_gateway(peers.settings(translate="always"))
    try:
        with ant(f"{gateway.url}/split") as split:
            raw = split.messages.with_raw_response.count_tokens(
                model=MODEL, messages=[{"role": "user", "content": "x" * 400}]
            )
        assert raw.parse().input_tokens == 100
        assert "estimated" in raw.headers[TRANSLATED_HEADER]
    finally:
        peers.stop_gateway(gateway)


def test_openai_sdk_responses_reach_the_split_pair_through_translation(peers: Peers) -> None:
    gateway = peers.start_gateway(peers.settings())
    try:
        before = handoffs(peers)
        with oai(f"{gateway.url}/split/v1") as split:
            raw = split.responses.with_raw_response.create(model=MODEL, input=PROMPT, max_output_tokens=6)
            assert raw.headers[REPLY_HEADER] == "split; reason=path"
            assert raw.headers[TRANSLATED_HEADER].startswith("chat")
            whole = raw.parse()
            events = list(split.responses.create(model=MODEL, input=PROMPT, max_output_tokens=6, stream=True))
        assert whole.status == "incomplete" and whole.output_text  # cut by its output limit
        kinds = [event.type for event in events]
        assert kinds[0] == "response.created" and kinds[-1] == "response.incomplete"
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert handoffs(peers) - before == 2
    finally:
        peers.stop_gateway(gateway)
