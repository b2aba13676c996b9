"""A prompt refused because the process ran out of something (open files, memory, lock table): one clear refusal of
that prompt, and one log line for a run of them, not a traceback per request."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class OutOfResources(RuntimeError):
    """The process lacks what taking a prompt needs; the prompt changed nothing and may be sent again later."""


class Shortages:
    """Turns an OSError met while taking a prompt into `OutOfResources`; logs the first of a run of them (with how
    many came before once the run ends), never a traceback."""

    def __init__(self) -> None:
        self.refused = 0

    def refusal(self, session_id: str, error: OSError) -> OutOfResources:
        if not self.refused:
            log.warning("refusing prompts: this process ran out of a resource (%s); more may be refused until it frees", error.strerror or error)
        self.refused += 1
        reason = error.strerror or str(error)
        return OutOfResources(f"Session {session_id} cannot take this prompt now: this process ran out of a resource ({reason}); nothing was done, send it again later")

    def recovered(self) -> None:
        """A prompt was taken again: a later shortage is logged anew."""
        if self.refused:
            log.warning("prompts are taken again; %d were refused for want of a resource", self.refused)
            self.refused = 0
