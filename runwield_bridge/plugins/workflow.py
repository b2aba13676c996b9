"""The Plan workflow's tools and commands, as a built-in plugin bound to one App's Plans, reviews and execution."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.artifact_reviews import ArtifactReviews, artifact_review_tool
from ..core.commands import Command
from ..core.plan_commands import PlanCommands
from ..core.plans import plan_tools
from ..core.tools import Tool
from ..hookspecs import hookimpl

NAME = "runwield_bridge.plugins.workflow"


@dataclass(frozen=True)
class PlanWorkflow:
    """Registers ``write_plan``, ``revise_plan`` and ``request_artifact_review`` and the Plan commands (``/load-plan``,
    ``/plan-review``)."""

    commands: PlanCommands
    artifacts: ArtifactReviews

    @hookimpl
    def register_tools(self, register: Callable[[Tool], None]) -> None:
        for tool in (*plan_tools(self.commands.plans), artifact_review_tool(self.artifacts)):
            register(tool)

    @hookimpl
    def register_commands(self, register: Callable[[Command], None]) -> None:
        for command in self.commands.commands():
            register(command)
