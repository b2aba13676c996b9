"""The Discord channel: discord.py's gateway client receives; its REST client sends, edits and answers interactions.

An @mention in a guild channel opens a thread, and the thread is the conversation (messages in a
thread with a session need no mention). DMs count only when ``allow_dms`` is on; other bots only
when ``allow_bots`` is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import replace
from typing import Any

import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from discord.http import Route

from ..allowlist import stranger_notice
from ..budget import Budgets
from ..contract import ChannelContext, Inbox
from ..types import BridgeError, Button, ButtonPress, CannotDelete, Capabilities, Conversation, IncomingMessage, MenuCommand, MessageRef, RateLimited, Sender
from ..streaming import StreamingReply
from .components import MODEL_SELECT, PRESS_PREFIX, button_view, model_view
from .events import conversation_of, incoming, sender_of, thread_name, without_mention
from .failures import refusals
from .settings import DiscordSettings
from .slash import slash_commands

log = logging.getLogger(__name__)

CHANNEL_RATE = 1.0  # Discord lets a bot post about five messages per five seconds in one channel
CHANNEL_BURST = 5
ACK_SECONDS = 2.0
"""How long an interaction's answer may take before it is acknowledged first: Discord drops one not answered in 3 s."""
MAX_RATE_LIMIT_WAIT = 30.0  # discord.py sleeps through shorter 429s itself; longer ones surface as RateLimited
NO_MENTIONS = discord.AllowedMentions.none()
INTENTS = discord.Intents(guilds=True, guild_messages=True, dm_messages=True, message_content=True)
CONVERSING = (discord.MessageType.default, discord.MessageType.reply)


class DiscordChannel:
    """Guild channels, threads and (if allowed) DMs; buttons and a model menu as components; slash commands."""

    name = "discord"
    capabilities = Capabilities(max_message_length=2000, edits=True, buttons=True, url_buttons=True, threads=True)

    def __init__(self, settings: DiscordSettings, context: ChannelContext) -> None:
        self.settings = settings
        self.budgets = Budgets(CHANNEL_RATE, CHANNEL_BURST, CHANNEL_RATE)
        self._client: discord.Client | None = None
        self._inbox: Inbox | None = None

    # -- receiving -----------------------------------------------------------

    async def run(self, inbox: Inbox) -> None:
        _use_endpoints(self.settings)
        client = self._client = discord.Client(intents=INTENTS, max_ratelimit_timeout=MAX_RATE_LIMIT_WAIT)
        tree = app_commands.CommandTree(client)
        for command in slash_commands(self._run_command, self._show_models):
            tree.add_command(command)
        self._listen(client)
        self._inbox = inbox
        try:
            with refusals(self.name):
                await client.login(self.settings.token)
                await _sync(tree)
                await client.connect()
        except asyncio.CancelledError:
            raise  # the client stays open until close(), so the Bridge can still post its last words
        except Exception:
            await client.close()
            raise
        raise ConnectionError("the Discord gateway connection was closed")

    async def verify(self) -> None:
        """Check the token with Discord (the bot's own user); CredentialsRejected or ChannelMisconfigured if Discord refuses it."""
        _use_endpoints(self.settings)
        client = discord.Client(intents=INTENTS)
        try:
            with refusals(self.name):
                await client.login(self.settings.token)
        finally:
            await client.close()

    def _listen(self, client: discord.Client) -> None:
        @client.event
        async def on_message(message: discord.Message) -> None:
            if client.user is not None:
                await self._on_message(message, client.user.id)

        @client.event
        async def on_interaction(interaction: discord.Interaction) -> None:
            if interaction.type is discord.InteractionType.component:
                await self._on_component(interaction, str((interaction.data or {}).get("custom_id", "")))

    async def _on_message(self, message: discord.Message, me: int) -> None:
        inbox = self._inbox
        if inbox is None or message.author.id == me or message.type not in CONVERSING:
            return
        if message.author.bot and not self.settings.allow_bots:
            return
        mentioned = any(user.id == me for user in message.mentions)
        event = incoming(message, conversation_of(message.channel), without_mention(message.content, me))
        conversation = event.conversation
        if not event.text and not event.images:
            return
        if not conversation.group:
            if not self.settings.allow_dms:
                return
        elif conversation.thread is None:
            if not mentioned:
                return
        elif not (mentioned or await inbox.is_bound(conversation)):
            return
        async with inbox.first_delivery(f"message:{message.id}", conversation, event.sender) as first:
            if not first:
                return
            if conversation.group and conversation.thread is None and inbox.allows(event.sender, conversation):
                event = replace(event, conversation=await self._open_thread(message, event))
            await inbox.receive_message(event)

    async def _open_thread(self, message: discord.Message, event: IncomingMessage) -> Conversation:
        """A thread on the message that mentioned the bot; where none can be opened, the channel itself."""
        try:
            thread = await message.create_thread(name=thread_name(event.text, event.sender.display_name or event.sender.name))
        except discord.HTTPException as exc:
            log.warning("could not open a thread in Discord channel %s (%s); answering in the channel", message.channel.id, exc)
            return event.conversation
        return conversation_of(thread)

    async def _on_component(self, interaction: discord.Interaction, custom_id: str) -> None:
        """A button press answers a Bridge question; a model menu choice switches the session's model."""
        async with self._claimed(interaction) as (inbox, asker):
            if asker is None:
                return
            conversation, sender = asker
            if custom_id.startswith(PRESS_PREFIX):
                press = ButtonPress(conversation, sender, custom_id, *_pressed(interaction, conversation, custom_id))
                await _tell_privately(interaction, inbox.receive_press(press))
            elif custom_id == MODEL_SELECT:
                await interaction.response.defer()
                values = (interaction.data or {}).get("values") or [""]
                try:
                    notice = await inbox.choose_model(conversation, str(values[0]))
                except BridgeError as exc:
                    notice = str(exc)
                await interaction.edit_original_response(content=notice, view=None)

    async def _run_command(self, interaction: discord.Interaction, text: str) -> None:
        """A slash command, echoed where it was given and handled as if typed there."""
        async with self._claimed(interaction) as (inbox, asker):
            if asker is not None:
                await interaction.response.send_message(text, allowed_mentions=NO_MENTIONS)
                await inbox.receive_message(IncomingMessage(*asker, text))

    async def _show_models(self, interaction: discord.Interaction) -> None:
        """/models: the session's models as a select menu, or else the agent's own /model command."""
        async with self._claimed(interaction) as (inbox, asker):
            if asker is None:
                return
            await interaction.response.defer(ephemeral=True, thinking=True)
            try:
                menu = await inbox.models(asker[0])
            except BridgeError as exc:
                await interaction.followup.send(str(exc), ephemeral=True)
                return
            if menu is None or not menu.choices:
                await interaction.followup.send("This agent lists no models; asking it with /model.", ephemeral=True)
                await inbox.receive_message(IncomingMessage(*asker, "/model"))
                return
            await interaction.followup.send(f"Current model: {menu.current or 'unknown'}", view=model_view(menu), ephemeral=True)

    @contextlib.asynccontextmanager
    async def _claimed(self, interaction: discord.Interaction) -> AsyncIterator[tuple[Inbox, tuple[Conversation, Sender] | None]]:
        """The inbox, and where and by whom an interaction was made, for its first delivery: every instance of the bot
        gets each interaction, one claims it. None for the others, and (after telling them privately) for people who
        may not use the bot there."""
        inbox = self._inbox
        if inbox is None:
            raise ConnectionError("an interaction came before the Discord channel started")
        conversation, sender = conversation_of(interaction.channel), sender_of(interaction.user)
        async with inbox.first_delivery(f"interaction:{interaction.id}", conversation, sender) as first:
            if not first:
                yield inbox, None
                return
            if not conversation.group and not self.settings.allow_dms:
                refusal = "Direct messages to this bot are turned off."
            elif not inbox.allows(sender, conversation):
                refusal = stranger_notice(self.name, sender, conversation)
            else:
                yield inbox, (conversation, sender)
                return
            await interaction.response.send_message(refusal, ephemeral=True)
            yield inbox, None

    # -- sending -------------------------------------------------------------

    async def send(self, conversation: Conversation, text: str, buttons: Sequence[Button] = ()) -> MessageRef:
        target = self._target(conversation)
        sent = await _rate_limited(target.send(text, view=button_view(buttons), allowed_mentions=NO_MENTIONS))
        return MessageRef(conversation, str(sent.id))

    async def edit(self, message: MessageRef, text: str, buttons: Sequence[Button] = ()) -> None:
        target = self._target(message.conversation).get_partial_message(int(message.id))
        await _rate_limited(target.edit(content=text, view=button_view(buttons), allowed_mentions=NO_MENTIONS))

    async def delete(self, message: MessageRef) -> None:
        """Delete a message: a person's only in a server where the bot has Manage Messages; never in a DM."""
        try:
            await _rate_limited(self._target(message.conversation).get_partial_message(int(message.id)).delete())
        except discord.Forbidden as exc:
            where = "in a server it needs the Manage Messages permission" if message.conversation.group else "in a DM it may delete only its own messages"
            raise CannotDelete(f"Discord did not let the bot delete your message ({exc.text or exc.status}): {where}.") from None

    async def typing(self, conversation: Conversation) -> None:
        await _rate_limited(self._target(conversation).typing())

    async def set_commands(self, conversation: Conversation, commands: Sequence[MenuCommand]) -> None:
        """Discord's slash commands are the same everywhere; the agent's own commands are typed as messages."""

    async def open_thread(self, conversation: Conversation, title: str) -> Conversation:
        """A new public thread in the conversation's channel (beside it, when it is a thread); none in a DM."""
        if not conversation.group:
            raise BridgeError("Discord has no threads in direct messages. Use /spawn AGENT --here TASK instead.")
        if self._client is None:
            raise ConnectionError("the Discord client has not started")
        try:
            parent = self._client.get_channel(int(conversation.chat)) or await self._client.fetch_channel(int(conversation.chat))
            if not isinstance(parent, discord.TextChannel):
                raise BridgeError("This Discord channel cannot have threads. Use /spawn AGENT --here TASK instead.")
            thread = await _rate_limited(parent.create_thread(name=thread_name(title, "the bot"), type=discord.ChannelType.public_thread))
        except discord.HTTPException as exc:
            raise BridgeError(f"Discord did not open a thread here ({exc.text or exc.status}). Use /spawn AGENT --here TASK instead.") from None
        return conversation_of(thread)

    def open_reply(self, conversation: Conversation) -> StreamingReply:
        budget = self.budgets.for_chat(conversation.thread or conversation.chat, conversation.group)
        return StreamingReply(self, conversation, budget, self.settings.edit_interval)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    def _target(self, conversation: Conversation) -> discord.PartialMessageable:
        if self._client is None:
            raise ConnectionError("the Discord client has not started")
        return self._client.get_partial_messageable(int(conversation.thread or conversation.chat))


def _use_endpoints(settings: DiscordSettings) -> None:
    """Point discord.py at another REST base and gateway (a local fake) when the config says so."""
    if settings.api_base_url:
        Route.BASE = settings.api_base_url.rstrip("/")
    if settings.gateway_url:
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(settings.gateway_url)


async def _sync(tree: app_commands.CommandTree) -> None:
    try:
        await tree.sync()
    except discord.HTTPException as exc:  # the commands are a convenience; messages work without them
        log.warning("could not register Discord's slash commands: %s", exc)


async def _rate_limited(call: Awaitable[Any]) -> Any:
    """A 429 discord.py would not wait out itself, as the channel contract's RateLimited."""
    try:
        return await call
    except discord.RateLimited as exc:
        raise RateLimited(exc.retry_after) from None


async def _tell_privately(interaction: discord.Interaction, notice: Awaitable[str]) -> None:
    """Answer an interaction with ``notice`` privately; if it takes longer than ``ACK_SECONDS`` (a press handed to
    another instance), acknowledge it first, as Discord wants within 3 s, and send the notice when it comes."""
    pending = asyncio.ensure_future(notice)
    try:
        done, _ = await asyncio.wait([pending], timeout=ACK_SECONDS)
        if done:
            await interaction.response.send_message(pending.result(), ephemeral=True)
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        await interaction.followup.send(await pending, ephemeral=True)
    finally:
        pending.cancel()


def _pressed(interaction: discord.Interaction, conversation: Conversation, custom_id: str) -> tuple[MessageRef | None, str]:
    """The pressed message and its text, where the pressed button is on it."""
    message = interaction.message
    if message is None:
        return None, ""
    on_it = any(getattr(child, "custom_id", None) == custom_id for row in message.components for child in getattr(row, "children", ()))
    return (MessageRef(conversation, str(message.id)) if on_it else None), message.content or ""
