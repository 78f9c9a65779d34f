"""The `--json` stream's events (docs/events.schema.json) as typed classes.

Each event is read into the class of its `type`; `raw` keeps the whole object, so a field this
version does not name is still there. A type this version does not know becomes `Event`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type


@dataclass
class Event:
    """Any event: its `type` and the object as dsh wrote it."""

    type: str
    raw: Dict[str, Any] = field(repr=False)


@dataclass
class SessionEvent(Event):
    session_id: str = ""
    cwd: str = ""
    schema_version: int = 0


@dataclass
class StatusEvent(Event):
    phase: str = ""
    turn: Optional[int] = None
    step: Optional[int] = None
    usage: Optional[Dict[str, Any]] = None
    reason: Optional[Dict[str, Any]] = None


@dataclass
class ThinkingEvent(Event):
    text: str = ""


@dataclass
class TextEvent(Event):
    text: str = ""


@dataclass
class ToolCallEvent(Event):
    call_id: str = ""
    tool: str = ""
    input: Any = None


@dataclass
class ToolResultEvent(Event):
    call_id: str = ""
    status: str = ""
    result: str = ""
    error: Optional[Dict[str, Any]] = None
    command: Optional[Dict[str, Any]] = None


@dataclass
class TodoEvent(Event):
    todos: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class GoalEvent(Event):
    operation: str = ""
    goal: Dict[str, Any] = field(default_factory=dict)


@dataclass
class PresentEvent(Event):
    title: str = ""
    path: Optional[str] = None
    summary: Optional[str] = None


@dataclass
class AgentEvent(Event):
    """An event of a subagent's run, tagged with its id."""

    agent_id: str = ""
    event: Optional[Event] = None


@dataclass
class FinalEvent(Event):
    session_id: str = ""
    reason: Dict[str, Any] = field(default_factory=dict)
    text: str = ""
    usage: Dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0
    steps: int = 0
    structured_output: Any = None


@dataclass
class ErrorEvent(Event):
    message: str = ""
    code: Optional[str] = None


EVENT_CLASSES: Dict[str, Type[Event]] = {
    "session": SessionEvent,
    "status": StatusEvent,
    "thinking": ThinkingEvent,
    "text": TextEvent,
    "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent,
    "todo": TodoEvent,
    "goal": GoalEvent,
    "present": PresentEvent,
    "agent": AgentEvent,
    "final": FinalEvent,
    "error": ErrorEvent,
}

# The wire's camelCase names of the fields spelled otherwise here.
_WIRE = {
    "session_id": "sessionId",
    "schema_version": "schemaVersion",
    "call_id": "callId",
    "agent_id": "agentId",
    "duration_ms": "durationMs",
    "structured_output": "structuredOutput",
}


def parse_event(raw: Dict[str, Any]) -> Event:
    """The event `raw` as its class."""
    kind = str(raw.get("type", ""))
    cls = EVENT_CLASSES.get(kind, Event)
    values: Dict[str, Any] = {}
    for name in getattr(cls, "__dataclass_fields__", {}):
        if name in ("type", "raw"):
            continue
        wire = _WIRE.get(name, name)
        if wire in raw:
            values[name] = raw[wire]
    if cls is AgentEvent and isinstance(values.get("event"), dict):
        values["event"] = parse_event(values["event"])
    return cls(type=kind, raw=raw, **values)
