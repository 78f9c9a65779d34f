"""What a run asks the host (approvals, questions, MCP forms), what a turn ends with, and the
errors the SDK raises, each carrying dsh's code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .events import FinalEvent


class DshError(Exception):
    """A refusal or failure, with dsh's code: the protocol's (BAD_INPUT, BAD_REQUEST,
    NO_SESSION, BUSY, UNKNOWN_REQUEST), a session's (SESSION_NOT_FOUND, CONFIG, AUTH...), or the
    SDK's own (BINARY_NOT_FOUND, PROCESS_EXITED)."""

    def __init__(self, code: str, message: str, hint: Optional[str] = None):
        super().__init__(f"{code}: {message}" + (f" (hint: {hint})" if hint else ""))
        self.code = code
        self.message = message
        self.hint = hint

    @classmethod
    def from_wire(cls, error: Dict[str, Any]) -> "DshError":
        return cls(str(error.get("code", "ERROR")), str(error.get("message", "")), error.get("hint"))


class TurnError(DshError):
    """A turn that ended in a failure (`reason.kind` is `error`): the provider's code and the
    turn's result."""

    def __init__(self, code: str, message: str, result: "TurnResult"):
        super().__init__(code, message)
        self.result = result


@dataclass
class TurnResult:
    """How a turn ended: `reason` as `final.reason` says it (`{"kind": "completed"}`...), the
    answer's text, and the `final` event itself."""

    reason: Dict[str, Any]
    text: str
    final: Optional[FinalEvent] = None

    @property
    def kind(self) -> str:
        return str(self.reason.get("kind", ""))


@dataclass
class ApprovalRequest:
    """A call that needs the host's approval (an escalation out of the sandbox, a network
    exception). Answer with one of `choices`: "once", "session" (what `grant` names, for the
    rest of the session) or "deny"."""

    id: str
    call_id: str
    tool: str
    reason: str
    grant: Optional[str]
    choices: List[str]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class Approval:
    """An approval's answer with a reason (told to the model when it denies)."""

    choice: str
    reason: Optional[str] = None


@dataclass
class QuestionOption:
    label: str
    description: Optional[str] = None


@dataclass
class Question:
    id: str
    question: str
    header: Optional[str]
    options: List[QuestionOption]
    multi_select: bool


@dataclass
class QuestionsRequest:
    """The model's questions (`ask_user_question`). Answer with a dict from question id to the
    chosen label(s), or own words with `{"custom": ...}`; None skips them all."""

    id: str
    call_id: str
    questions: List[Question]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class FormRequest:
    """An MCP server's form. Answer with the content (a dict by field name), or None to
    decline."""

    id: str
    server: str
    message: str
    schema: Dict[str, Any]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)


def read_request(message: Dict[str, Any]) -> Any:
    """A `request` line as its class."""
    kind = message.get("kind")
    if kind == "approval":
        return ApprovalRequest(
            id=message["id"], call_id=message.get("callId", ""), tool=message.get("tool", ""),
            reason=message.get("reason", ""), grant=message.get("grant"),
            choices=list(message.get("choices", [])), raw=message,
        )
    if kind == "questions":
        questions = [
            Question(
                id=q["id"], question=q.get("question", ""), header=q.get("header"),
                options=[QuestionOption(o["label"], o.get("description")) for o in q.get("options", [])],
                multi_select=bool(q.get("multiSelect")),
            )
            for q in message.get("questions", [])
        ]
        return QuestionsRequest(id=message["id"], call_id=message.get("callId", ""),
                                questions=questions, raw=message)
    return FormRequest(id=message["id"], server=message.get("server", ""),
                       message=message.get("message", ""), schema=message.get("schema", {}),
                       raw=message)


@dataclass
class RewindChange:
    """A file changed outside dsh since the checkpoint: its path and `added`, `modified` or
    `deleted`. A rewind over one needs `force=True`."""

    path: str
    kind: str


@dataclass
class RewindApplied:
    """What a rewind did, once applied: the turn it went back to (or `undo`), whether it took
    back the files and the conversation, and how many files it wrote and removed."""

    files: bool
    conversation: bool
    written: int
    removed: int
    to_turn: Optional[int] = None
    undo: bool = False
    backup: Optional[str] = None
    restored: Optional[str] = None


@dataclass
class RewindReport:
    """A rewind's report (`rewindReport` in docs/events.schema.json): the files it restores and
    removes, those changed outside dsh, the paths no checkpoint covers, what was done (None
    for a preview, `apply=False`) and the paths that could not be put back, each with why."""

    restore: List[str]
    remove: List[str]
    changed_outside: List[RewindChange]
    uncovered: List[str]
    applied: Optional[RewindApplied]
    failed: List[Tuple[str, str]]
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_wire(cls, report: Dict[str, Any]) -> "RewindReport":
        plan = report.get("plan", {})
        done = report.get("applied")
        applied = None
        if isinstance(done, dict):
            applied = RewindApplied(
                files=bool(done.get("files")), conversation=bool(done.get("conversation")),
                written=int(done.get("written", 0)), removed=int(done.get("removed", 0)),
                to_turn=done.get("toTurn"), undo=bool(done.get("undo")),
                backup=done.get("backup"), restored=done.get("restored"),
            )
        return cls(
            restore=list(plan.get("restore", [])), remove=list(plan.get("remove", [])),
            changed_outside=[RewindChange(c["path"], c["kind"])
                             for c in report.get("changedOutside", [])],
            uncovered=list(report.get("uncovered", [])), applied=applied,
            failed=[(str(p), str(why)) for p, why in report.get("failed", [])], raw=report,
        )
