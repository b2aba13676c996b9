"""The compiled schema checks (acp/schema_check.py) agree with jsonschema on every request type the server takes:
on valid params, on every one-step mutation of them, and on arbitrary JSON values (hypothesis)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runwield_bridge.acp.schema_check import SchemaChecks
from runwield_bridge.acp.official_schema import definitions

SESSION = "ses_0123456789abcdef0123456789abcdef"
TEXT = {"type": "text", "text": "hello"}
SAMPLES: dict[str, list[Any]] = {
    "InitializeRequest": [
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}},
        {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "c", "version": "1"}, "_meta": {"k": 1}},
    ],
    "AuthenticateRequest": [{"methodId": "token"}],
    "NewSessionRequest": [
        {"cwd": "/tmp", "mcpServers": []},
        {"cwd": "/tmp", "mcpServers": [{"name": "s", "command": "x", "args": ["a"], "env": [{"name": "A", "value": "b"}]}]},
        {"cwd": "/tmp", "mcpServers": [{"type": "http", "name": "h", "url": "http://x", "headers": [{"name": "A", "value": "b"}]}]},
    ],
    "LoadSessionRequest": [{"sessionId": SESSION, "cwd": "/tmp", "mcpServers": []}],
    "ResumeSessionRequest": [{"sessionId": SESSION, "cwd": "/tmp"}],
    "ListSessionsRequest": [{}, {"cwd": "/tmp", "cursor": "c"}],
    "PromptRequest": [
        {"sessionId": SESSION, "prompt": [TEXT]},
        {
            "sessionId": SESSION,
            "prompt": [
                TEXT,
                {"type": "image", "data": "aGk=", "mimeType": "image/png", "uri": "file:///a.png"},
                {"type": "resource_link", "name": "a", "uri": "file:///a", "size": 3},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "x", "mimeType": "text/plain"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk="}},
                {"type": "text", "text": "t", "annotations": {"audience": ["user"], "priority": 0.5}},
            ],
        },
    ],
    "CloseSessionRequest": [{"sessionId": SESSION}],
    "DeleteSessionRequest": [{"sessionId": SESSION}],
    "SetSessionConfigOptionRequest": [{"sessionId": SESSION, "configId": "model", "value": "scripted"}],
    "CancelNotification": [{"sessionId": SESSION}],
}
REPLACEMENTS: list[Any] = [None, True, False, 0, 1, -1, 1.0, 1.5, 2**40, "", "x", "user", "text", [], [1], {}, {"type": "text"}]


def mutations(value: Any) -> Iterator[Any]:
    """Every value one step from ``value``: a part replaced, a key dropped or added, an item dropped or doubled."""
    yield from REPLACEMENTS
    if isinstance(value, dict):
        for key in value:
            yield {k: v for k, v in value.items() if k != key}
            for changed in mutations(value[key]):
                yield {**value, key: changed}
        yield {**value, "unknown": 1}
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield value[:i] + value[i + 1 :]
            yield value[: i + 1] + [copy.deepcopy(item)] + value[i + 1 :]
            for changed in mutations(item):
                yield value[:i] + [changed] + value[i + 1 :]


def validator(type_name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{type_name}", "$defs": definitions()})


@pytest.mark.parametrize("type_name", sorted(SAMPLES))
def test_compiled_check_agrees_with_jsonschema(type_name: str) -> None:
    check = SchemaChecks(definitions()).check(type_name)
    assert check is not None, f"{type_name} has no compiled check"
    reference = validator(type_name)
    for sample in SAMPLES[type_name]:
        assert reference.is_valid(sample) and check(sample), sample
        for mutated in mutations(sample):
            assert check(mutated) == reference.is_valid(mutated), mutated


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.sampled_from(["", "text", "image", SESSION]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["sessionId", "prompt", "type", "text", "cwd", "mcpServers"]), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON, type_name=st.sampled_from(sorted(SAMPLES)))
def test_compiled_check_agrees_on_any_json(value: Any, type_name: str) -> None:
    check = SchemaChecks(definitions()).check(type_name)
    assert check is not None
    assert check(value) == validator(type_name).is_valid(value)
