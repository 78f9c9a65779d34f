"""Drive dsh, the command-line coding agent, from Python over `dsh app-server` (docs/sdk.md).

    async with Dsh(cwd="/repo", mode="workspace-write") as run:
        async for event in run.send("Fix the failing test"):
            ...
"""

from .client import Dsh, find_binary
from .events import (
    AgentEvent, ErrorEvent, Event, EVENT_CLASSES, FinalEvent, GoalEvent, PresentEvent,
    SessionEvent, StatusEvent, TextEvent, ThinkingEvent, TodoEvent, ToolCallEvent,
    ToolResultEvent, parse_event,
)
from .sync import DshSync
from .tools import Tool, tool
from .types import (
    Approval, ApprovalRequest, DshError, FormRequest, Question, QuestionOption,
    QuestionsRequest, RewindApplied, RewindChange, RewindReport, TurnError, TurnResult,
)

__all__ = [
    "AgentEvent", "Approval", "ApprovalRequest", "Dsh", "DshError", "DshSync", "ErrorEvent",
    "Event", "EVENT_CLASSES", "FinalEvent", "FormRequest", "GoalEvent", "PresentEvent",
    "Question", "QuestionOption", "QuestionsRequest", "RewindApplied", "RewindChange",
    "RewindReport", "SessionEvent", "StatusEvent",
    "TextEvent", "ThinkingEvent", "TodoEvent", "ToolCallEvent", "ToolResultEvent", "TurnError",
    "TurnResult", "find_binary", "parse_event", "Tool", "tool",
]
