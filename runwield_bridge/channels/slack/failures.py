"""slack-sdk's API errors sorted: what may pass (retried) and what is Slack's final word on the configuration (stops)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from slack_sdk.errors import SlackApiError

from ..types import ChannelMisconfigured, CredentialsRejected, Unavailable

REJECTED_AUTH = ("not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired")
PASSING = ("ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout")
"""Error codes Slack gives for trouble on its side, which may pass."""


def sorted_out(exc: SlackApiError, key: str) -> Exception:
    """``exc`` as the channel contract sees it: Unavailable for 5xx, 429 and Slack's own trouble; CredentialsRejected for
    a refused token; ChannelMisconfigured naming ``key`` for any other refusal (``missing_scope``, ``not_allowed_token_type``)."""
    status, error = exc.response.status_code, str(exc.response.get("error") or "")
    if status == 429 or status >= 500 or error in PASSING:
        return Unavailable(f"Slack could not be reached or failed (HTTP {status}{f', {error}' if error else ''})")
    if error in REJECTED_AUTH:
        return CredentialsRejected(key, "Slack")
    needed = exc.response.get("needed")
    return ChannelMisconfigured(key, "Slack", (error or f"HTTP {status}") + (f"; the app needs the scope {needed}" if needed else ""))


@contextlib.contextmanager
def refusals(key: str) -> Iterator[None]:
    """Raise Slack's API errors inside as ``sorted_out`` says."""
    try:
        yield
    except SlackApiError as exc:
        raise sorted_out(exc, key) from None
