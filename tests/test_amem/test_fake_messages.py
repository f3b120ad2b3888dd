"""FakeMessagesServer: the real anthropic SDK accepts its answers and sees its errors."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import pytest

from memvault.testing.fake_messages import FakeMessagesServer, FakeReply


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as s:
        yield s


def _client(server: FakeMessagesServer, timeout: float = 2.0) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key", base_url=server.base_url, timeout=timeout, max_retries=0
    )


def _ask(client: anthropic.Anthropic, text: str = "hello") -> anthropic.types.Message:
    return client.messages.create(
        model="claude-test",
        max_tokens=32,
        system="sys",
        messages=[{"role": "user", "content": text}],
    )


def test_fake_server_text_reply_accepted_by_sdk(server: FakeMessagesServer) -> None:
    server.add_reply('{"ok": true}')
    message = _ask(_client(server))
    assert message.type == "message" and message.role == "assistant"
    assert message.model == "claude-test"
    assert message.content[0].type == "text"
    assert message.content[0].text == '{"ok": true}'
    assert message.usage.input_tokens > 0 and message.stop_reason == "end_turn"


def test_fake_server_records_headers_and_body(server: FakeMessagesServer) -> None:
    server.add_reply("x")
    _ask(_client(server), "remember this")
    (request,) = server.requests
    assert request.path == "/v1/messages" and request.method == "POST"
    assert "anthropic-version" in request.headers
    assert request.json["messages"][0]["content"] == "remember this"
    assert "remember this" in request.prompt_text() and "sys" in request.prompt_text()


def test_fake_server_queue_then_responder(server: FakeMessagesServer) -> None:
    server.add_reply("first")
    server.responder = lambda body: "echo:" + body["messages"][0]["content"]
    client = _client(server)
    assert _ask(client).content[0].text == "first"
    assert _ask(client, "again").content[0].text == "echo:again"


def test_fake_server_unscripted_call_answers_500(server: FakeMessagesServer) -> None:
    with pytest.raises(anthropic.InternalServerError):
        _ask(_client(server))


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.APIStatusError),
    ],
)
def test_fake_server_scripted_status_raises_sdk_error(
    server: FakeMessagesServer, status: int, error: type[Exception]
) -> None:
    server.add_reply(FakeReply(status=status))
    with pytest.raises(error) as info:
        _ask(_client(server))
    assert getattr(info.value, "status_code", None) == status


def test_fake_server_slow_reply_times_out(server: FakeMessagesServer) -> None:
    server.add_reply(FakeReply(text="late", delay_s=2.0))
    with pytest.raises(anthropic.APITimeoutError):
        _ask(_client(server, timeout=0.2))


def test_fake_server_raw_body_sent_verbatim(server: FakeMessagesServer) -> None:
    envelope = {
        "id": "msg_raw",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "raw"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    server.add_reply(FakeReply(body=json.dumps(envelope)))
    assert _ask(_client(server)).id == "msg_raw"


def test_fake_server_base_url_is_loopback(server: FakeMessagesServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    with pytest.raises(RuntimeError):
        _ = FakeMessagesServer().base_url
