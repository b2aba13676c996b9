"""The runtime axis: each Session's turns are driven by its own runtime, native or an external agent."""

from __future__ import annotations

from ..core.runtime import Runtime, TurnRequest, TurnResult
from .choice import NATIVE, RuntimeChoices


class RuntimeSwitch:
    """The Runtime the Session Host uses: hands each turn to the native runtime or to the external one, as the
    Session has chosen."""

    def __init__(self, native: Runtime, external: Runtime, choices: RuntimeChoices) -> None:
        self.native = native
        self.external = external
        self.choices = choices

    async def run_turn(self, request: TurnRequest) -> TurnResult:
        runtime = self.native if await self.choices.of(request.session.id) == NATIVE else self.external
        return await runtime.run_turn(request)
