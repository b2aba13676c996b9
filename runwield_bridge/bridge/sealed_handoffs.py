"""Messages handed from one ``wld bridge`` instance to another are sealed (Fernet: AES-128-CBC with HMAC-SHA256) before
their row is written, so a message's text (the reply to a secret question among them) is never in the database. The
key is made (HKDF-SHA256) from the channel's credential, its bot token, which every instance serving the channel is
configured with and the database never holds."""

from __future__ import annotations

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..channels.settings import ChannelSettings

PURPOSE = b"wld handed-over messages"


def seal(settings: ChannelSettings, payload: str) -> str:
    return _fernet(_credential(settings)).encrypt(payload.encode()).decode("ascii")


def unseal(settings: ChannelSettings, sealed: str) -> str:
    """The payload ``seal`` sealed; a clear error where it cannot be opened (the instances' credentials differ)."""
    try:
        return _fernet(_credential(settings)).decrypt(sealed.encode("ascii")).decode()
    except InvalidToken:
        raise ValueError("a message handed over by another instance could not be opened: the instances' channel tokens differ") from None


def _credential(settings: ChannelSettings) -> str:
    if settings.credential is None:
        raise ValueError("this channel has no token to seal a handed-over message with")
    return settings.credential


@functools.lru_cache(maxsize=8)
def _fernet(credential: str) -> Fernet:
    key = HKDF(algorithm=SHA256(), length=32, salt=None, info=PURPOSE).derive(credential.encode())
    return Fernet(base64.urlsafe_b64encode(key))
