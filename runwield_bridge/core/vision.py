"""Images in prompts: a vision model sees them; a text-only model gets a reference to the saved image and the
``see_image`` tool, which asks the configured vision model (``[sessions] vision_fallback``) about it."""

from __future__ import annotations

import hashlib
import mimetypes
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .catalog import ModelCatalog
from .models import ChatMessage, Image, ModelRequest, TextDelta, ToolSpec
from .tools import Tool, ToolContext, ToolError

SEE_IMAGE = "see_image"
_REF = re.compile(r"^img-[0-9a-f]{16}\.[a-z0-9]+$")


class ImagesUnsupported(ValueError):
    """The Session's model cannot see images and no vision model is configured to look for it."""


class Attachments:
    """Images from prompts, saved per Session under the state directory and named by their content."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def save(self, session_id: str, image: Image) -> str:
        """Keep the image; returns its reference (a file name in the Session's attachment directory)."""
        suffix = (mimetypes.guess_extension(image.mime_type) or ".bin").lstrip(".")
        ref = f"img-{hashlib.sha256(image.data).hexdigest()[:16]}.{suffix}"
        folder = self.root / session_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ref).write_bytes(image.data)
        return ref

    def load(self, session_id: str, ref: str) -> Image:
        path = self.root / session_id / ref
        if not _REF.match(ref) or not path.is_file():
            raise ToolError(f"no image {ref!r} in this Session")
        mime_type = mimetypes.guess_type(ref)[0] or "application/octet-stream"
        return Image(path.read_bytes(), mime_type)


class Vision:
    """How a Session's prompt images reach its model."""

    def __init__(self, models: ModelCatalog, attachments: Attachments, fallback: str | None) -> None:
        self.models = models
        self.attachments = attachments
        self.fallback = fallback

    @property
    def accepts_images(self) -> bool:
        """Some model can see images (a vision fallback is one)."""
        return any(info.vision for info in self.models.all())

    def prepare(self, session_id: str, model_id: str, text: str, images: Sequence[Image]) -> tuple[str, tuple[Image, ...]]:
        """The prompt's text (with a reference to each saved image) and the images the model itself receives.
        Raises ImagesUnsupported, saving nothing, when neither the model nor a fallback can see them."""
        if not images:
            return text, ()
        sees = self.models.info(model_id).vision
        if not sees and self.fallback is None:
            raise ImagesUnsupported(
                f"the model {model_id!r} cannot see images; choose a vision model or set [sessions] vision_fallback"
            )
        refs = [self.attachments.save(session_id, image) for image in images]
        if sees:
            return "\n".join([text, *(f"[image {ref}]" for ref in refs)]), tuple(images)
        notes = [f"[image {ref}: you cannot see it; call {SEE_IMAGE} with this reference to ask about it]" for ref in refs]
        return "\n".join([text, *notes]), ()

    def tools_for(self, model_id: str) -> tuple[Tool, ...]:
        """``see_image`` for a text-only model when a vision fallback is set."""
        if self.fallback is None or self.models.info(model_id).vision:
            return ()
        return (Tool(ToolSpec(SEE_IMAGE, f"Ask the vision model {self.fallback!r} about an image in this Session", _SEE_PARAMS), "read", self._see),)

    async def _see(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        assert self.fallback is not None, "see_image is offered only with a fallback"
        image = self.attachments.load(ctx.session_id, str(arguments.get("image", "")))
        question = str(arguments.get("question") or "Describe this image.")
        request = ModelRequest((ChatMessage("user", question, images=(image,)),), cwd=str(ctx.cwd))
        text = [event.text async for event in self.models.build(self.fallback).stream(request) if isinstance(event, TextDelta)]
        return "".join(text)


_SEE_PARAMS = {
    "type": "object",
    "properties": {
        "image": {"type": "string", "description": "the image reference, such as img-0123456789abcdef.png"},
        "question": {"type": "string", "description": "what to ask about the image"},
    },
    "required": ["image"],
}
