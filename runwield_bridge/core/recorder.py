"""A Session's transcript as its turns write it and as it is read back: for the user, and for the model."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .events import Event, Notice
from .live import LiveSession, SessionNotFound
from .models import ChatMessage
from .records import TranscriptEntry
from .runtime import TurnResult
from .transcript import INTERRUPTED_ENTRY, TurnJournal, replay

if TYPE_CHECKING:
    from .store.sessions import SessionRepository

TITLE_LENGTH = 60
ORPHANED_QUESTION = (
    "The question “{prompt}” was asked by a process that has since stopped, so it can no longer be answered. "
    "Nothing was chosen; run the command again to retry it."
)


class TranscriptRecorder:
    """Starts and settles each turn in the transcript, replays it, and keeps the model's view of it up to date."""

    def __init__(self, sessions: SessionRepository) -> None:
        self.sessions = sessions

    async def history(self, session_id: str, *, idle: bool) -> list[Event]:
        """The saved conversation as events, oldest first. When the Session is ``idle`` (no writer anywhere), turns
        still marked running were cut short by their process ending: they are first marked interrupted (once)."""
        if idle and (running := await self.sessions.running_turns(session_id)):
            await self.sessions.interrupt_turns(session_id, running, INTERRUPTED_ENTRY)
        return replay(await self.sessions.transcript(session_id))

    def journal(self, live: LiveSession) -> TurnJournal:
        """A new turn's journal, which writes what the turn shows as it goes."""
        live.journal = TurnJournal(self.sessions, live.record.id)
        return live.journal

    async def begin(self, live: LiveSession, journal: TurnJournal, text: str | None, *, command: bool) -> list[ChatMessage]:
        """Start the turn in the transcript with the prompt (titling an untitled Session), durably before anything
        of the turn is shown, re-reading the Session (another process may have changed it) in the same transaction;
        returns the model's history before it. A slash command is kept for the user to see, not for the model, and
        titles nothing; a turn the Session starts itself (no text) has no prompt."""
        entries = [] if text is None else [("user", text, {"audience": "user"} if command else {})]
        title = text.strip().splitlines()[0][:TITLE_LENGTH] if text is not None and not command and text.strip() else None
        record, before = await journal.begin(entries, after=live.history_until, title=title)
        if record is None:
            raise SessionNotFound(f"no Session with id {live.record.id!r}")
        live.record = record
        return self._folded(live, before)

    async def end(self, live: LiveSession, journal: TurnJournal, result: TurnResult, stop_reason: str) -> None:
        """Settle the turn in the transcript, adding its cost to the Session's."""
        cost = {"cost_delta": result.cost_usd} if result.cost_usd else {}
        live.record = await journal.end(stop_reason, **cost) or live.record

    async def model_history(self, live: LiveSession) -> list[ChatMessage]:
        """The conversation as the model sees it, read incrementally (other processes may have added to it)."""
        return self._folded(live, await self.sessions.transcript(live.record.id, after=live.history_until))

    def _folded(self, live: LiveSession, entries: list[TranscriptEntry]) -> list[ChatMessage]:
        """The model's view with the transcript entries read since it was last brought up to date."""
        for entry in entries:
            live.history_until = entry.id or live.history_until
            if entry.payload.get("audience") == "user":
                continue
            if entry.kind == "user":
                live.history.append(ChatMessage("user", entry.text))
                live.history_message = None
            elif entry.kind == "agent":
                message_id = entry.payload.get("message_id")
                if message_id and message_id == live.history_message:  # the next piece of the same reply
                    live.history[-1] = replace(live.history[-1], text=live.history[-1].text + entry.text)
                else:
                    live.history.append(ChatMessage("assistant", entry.text))
                live.history_message = message_id
        return list(live.history)

    async def retire_orphaned_question(self, live: LiveSession) -> None:
        """A chat question left unsettled by a stopped process: tell the user to retry it, and mark it settled."""
        asked = [e for e in await self.sessions.transcript(live.record.id) if e.kind in ("question", "question_settled")]
        if asked and asked[-1].kind == "question":
            text = ORPHANED_QUESTION.format(prompt=asked[-1].text.splitlines()[0])
            await self.sessions.append_many(live.record.id, [("question_settled", "", {"status": "gone"}), ("notice", text, {"level": "warning"})])
            await live.emit(Notice(text, "warning"))
