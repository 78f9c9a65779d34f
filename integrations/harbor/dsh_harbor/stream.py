"""Read dsh's ``--json`` event stream and turn it into what Harbor records.

Standard library only: Harbor need not be installed to use or test this module.

The stream (docs/json-stream.md, docs/events.schema.json in the dsh repository) is one JSON
object per line. This module reads it in one pass (:func:`parse_lines`, :func:`parse_file`)
into a :class:`StreamSummary`, from which come

- :func:`context_fields`: the values of Harbor's ``AgentContext`` (``n_input_tokens``,
  ``n_cache_tokens``, ``n_output_tokens``, ``cost_usd``, ``metadata``), and
- :func:`to_trajectory`: an ATIF trajectory as plain dicts and lists, with Harbor's field
  names (``harbor.models.trajectories``), ready for ``json.dump`` or
  ``Trajectory.model_validate``.

Reading never fails on the stream's content: a line that is not a JSON object is counted
as malformed, an event type this module does not know is counted and skipped, and a field
of the wrong type is read as absent.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterable

#: The ATIF version the trajectories claim. They use only fields that version defines, so
#: they validate with every Harbor release whose models accept it (v1.6 and later).
ATIF_SCHEMA_VERSION = "ATIF-v1.6"

#: The stream format versions this module was written against (the ``session`` event's
#: ``schemaVersion``).
KNOWN_STREAM_VERSIONS = (1,)

_USAGE_KEYS = (
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "reasoningTokens",
    "totalTokens",
    "unreportedCalls",
)

#: How many malformed lines are quoted in the metadata (the count is always whole).
_MALFORMED_SAMPLES = 3
_SAMPLE_CHARS = 200


# --------------------------------------------------------------------------------------
# Usage
# --------------------------------------------------------------------------------------


def _count(value: Any) -> int:
    """A token count from the stream: a non-negative integer, else 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def _money(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)


@dataclass
class Usage:
    """dsh's usage buckets. They are disjoint: the billed input is
    ``input_tokens + cache_read_tokens + cache_write_tokens``, and ``reasoning_tokens`` is
    part of ``output_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    unreported_calls: int = 0
    cost_usd: float | None = None

    @classmethod
    def from_event(cls, raw: Any) -> Usage | None:
        if not isinstance(raw, dict):
            return None
        return cls(
            input_tokens=_count(raw.get("inputTokens")),
            output_tokens=_count(raw.get("outputTokens")),
            cache_read_tokens=_count(raw.get("cacheReadTokens")),
            cache_write_tokens=_count(raw.get("cacheWriteTokens")),
            reasoning_tokens=_count(raw.get("reasoningTokens")),
            total_tokens=_count(raw.get("totalTokens")),
            unreported_calls=_count(raw.get("unreportedCalls")),
            cost_usd=_money(raw.get("costUsd")),
        )

    def __add__(self, other: Usage) -> Usage:
        if self.cost_usd is None and other.cost_usd is None:
            cost = None
        else:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            unreported_calls=self.unreported_calls + other.unreported_calls,
            cost_usd=cost,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every input token billed, cached or not: what Harbor calls input or prompt
        tokens."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


# --------------------------------------------------------------------------------------
# The parsed stream
# --------------------------------------------------------------------------------------


@dataclass
class ToolCallRecord:
    call_id: str
    tool: str
    arguments: dict[str, Any]
    #: ``tool_call.input`` when it was not an object (text that is not JSON), else None.
    raw_input: Any = None
    input_missing: bool = False
    result: str | None = None
    status: str | None = None
    error: dict[str, Any] | None = None
    command: dict[str, Any] | None = None


@dataclass
class StepRecord:
    """One model request of the top agent (``step_start`` .. ``step_end``), or, with
    ``kind`` ``"system"``, a failure worth showing as a step of its own."""

    kind: str  # "agent" or "system"
    turn: int | None = None
    step: int | None = None
    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage | None = None
    ended: bool = False
    todos: list[Any] | None = None
    truncated_events: int = 0
    #: Results whose call this step does not hold (kept, without a call id).
    stray_results: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""  # system steps
    detail: dict[str, Any] | None = None  # system steps

    def call(self, call_id: str) -> ToolCallRecord | None:
        for record in reversed(self.tool_calls):
            if record.call_id == call_id and record.result is None:
                return record
        return None


@dataclass
class StreamSummary:
    session_id: str | None = None
    cwd: str | None = None
    stream_version: Any = None
    steps: list[StepRecord] = field(default_factory=list)
    #: Every ``final`` event, in order (one per run; more with --input-format stream-json).
    finals: list[dict[str, Any]] = field(default_factory=list)
    #: Every ``error`` event: ``{"code", "message"}``.
    errors: list[dict[str, Any]] = field(default_factory=list)
    turn_reasons: list[Any] = field(default_factory=list)
    step_end_usage: Usage = field(default_factory=Usage)
    step_end_count: int = 0
    line_count: int = 0
    event_count: int = 0
    malformed_lines: int = 0
    malformed_samples: list[dict[str, Any]] = field(default_factory=list)
    skipped_types: Counter = field(default_factory=Counter)
    subagent_events: Counter = field(default_factory=Counter)
    truncated_events: int = 0
    todos: list[Any] | None = None

    # -- derived ------------------------------------------------------------------------

    @property
    def final(self) -> dict[str, Any] | None:
        return self.finals[-1] if self.finals else None

    @property
    def usage(self) -> Usage:
        """The run's usage: the sum of the ``final`` events' usage (dsh's own total), or,
        when the stream has no ``final`` (the process was killed), the sum of the top
        agent's ``step_end`` usage, which is the same total for the steps that ended."""
        totals = [Usage.from_event(f.get("usage")) for f in self.finals]
        totals = [t for t in totals if t is not None]
        if totals:
            total = Usage()
            for t in totals:
                total = total + t
            return total
        return self.step_end_usage

    @property
    def usage_source(self) -> str:
        if any(isinstance(f.get("usage"), dict) for f in self.finals):
            return "final"
        if self.step_end_count:
            return "step_end"
        return "none"

    @property
    def final_reason(self) -> Any:
        final = self.final
        if final is not None:
            return final.get("reason")
        return self.turn_reasons[-1] if self.turn_reasons else None

    @property
    def tool_call_count(self) -> int:
        return sum(len(s.tool_calls) for s in self.steps)


# --------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------


class _Parser:
    def __init__(self) -> None:
        self.summary = StreamSummary()
        self.open: StepRecord | None = None

    # The step that events land in: the open one, or an implicit one when an event comes
    # outside step_start .. step_end (it should not, but nothing is dropped if it does).
    def _current(self) -> StepRecord:
        if self.open is None:
            self.open = StepRecord(kind="agent")
            self.summary.steps.append(self.open)
        return self.open

    def _system(self, message: str, detail: dict[str, Any]) -> None:
        self.summary.steps.append(StepRecord(kind="system", message=message, detail=detail))

    def line(self, line: str) -> None:
        s = self.summary
        s.line_count += 1
        text = line.strip()
        if not text:
            return
        try:
            event = json.loads(text)
        except (ValueError, RecursionError):
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            self._malformed(text, "not a JSON object with a type")
            return
        s.event_count += 1
        if event.get("truncated") is True:
            s.truncated_events += 1
        try:
            self.event(event)
        except Exception as exc:  # a field of a shape this reader did not expect
            self._malformed(text, f"unreadable {event.get('type')} event: {exc}")

    def _malformed(self, text: str, why: str) -> None:
        s = self.summary
        s.malformed_lines += 1
        if len(s.malformed_samples) < _MALFORMED_SAMPLES:
            s.malformed_samples.append(
                {"line": s.line_count, "why": why, "text": text[:_SAMPLE_CHARS]}
            )

    def event(self, event: dict[str, Any]) -> None:
        s = self.summary
        kind = event["type"]
        if kind == "session":
            sid = event.get("sessionId")
            if isinstance(sid, str) and s.session_id is None:
                s.session_id = sid
            if isinstance(event.get("cwd"), str) and s.cwd is None:
                s.cwd = event["cwd"]
            s.stream_version = event.get("schemaVersion")
        elif kind == "status":
            self.status(event)
        elif kind in ("text", "thinking"):
            value = event.get("text")
            if isinstance(value, str):
                step = self._current()
                (step.texts if kind == "text" else step.thinking).append(value)
                if event.get("truncated") is True:
                    step.truncated_events += 1
        elif kind == "tool_call":
            self.tool_call(event)
        elif kind == "tool_result":
            self.tool_result(event)
        elif kind == "todo":
            todos = event.get("todos")
            if isinstance(todos, list):
                s.todos = todos
                if self.open is not None:
                    self.open.todos = todos
        elif kind == "agent":
            agent_id = event.get("agentId")
            s.subagent_events[agent_id if isinstance(agent_id, str) else "?"] += 1
        elif kind == "final":
            s.finals.append(event)
            if not s.session_id and isinstance(event.get("sessionId"), str):
                s.session_id = event["sessionId"]
            reason = event.get("reason")
            # A run that ended badly without a turn_end (or with one this reader has
            # already shown) gets one system step, not two.
            if _is_failure(reason) and reason not in s.turn_reasons:
                self._system(_reason_message(reason), {"reason": reason})
            self.open = None
        elif kind == "error":
            code = event.get("code") if isinstance(event.get("code"), str) else None
            message = event.get("message") if isinstance(event.get("message"), str) else ""
            s.errors.append({"code": code, "message": message})
            self._system(
                f"dsh error {code or 'UNKNOWN'}: {message}".rstrip(),
                {"error": {"code": code, "message": message}},
            )
        else:
            s.skipped_types[kind] += 1

    def status(self, event: dict[str, Any]) -> None:
        s = self.summary
        phase = event.get("phase")
        turn = event.get("turn") if isinstance(event.get("turn"), int) else None
        step_no = event.get("step") if isinstance(event.get("step"), int) else None
        if phase == "step_start":
            self.open = StepRecord(kind="agent", turn=turn, step=step_no)
            s.steps.append(self.open)
        elif phase == "step_end":
            usage = Usage.from_event(event.get("usage"))
            step = self.open
            if step is None or (
                step.step is not None and step_no is not None and step.step != step_no
            ):
                # A step_end without its step_start: keep its usage on a step of its own.
                step = StepRecord(kind="agent", turn=turn, step=step_no)
                s.steps.append(step)
            step.usage = usage
            step.ended = True
            if usage is not None:
                s.step_end_usage = s.step_end_usage + usage
            s.step_end_count += 1
            self.open = None
        elif phase == "turn_end":
            reason = event.get("reason")
            s.turn_reasons.append(reason)
            if _is_failure(reason):
                self._system(_reason_message(reason), {"reason": reason, "turn": turn})
            self.open = None
        elif phase == "turn_start":
            self.open = None
        else:
            s.skipped_types[f"status/{phase}"] += 1

    def tool_call(self, event: dict[str, Any]) -> None:
        call_id = event.get("callId")
        tool = event.get("tool")
        if not isinstance(call_id, str) or not isinstance(tool, str):
            raise ValueError("tool_call without callId or tool")
        raw = event.get("input")
        record = ToolCallRecord(call_id=call_id, tool=tool, arguments={})
        if isinstance(raw, dict):
            record.arguments = raw
        elif "input" in event:
            # Argument text that is not JSON is kept as a string by dsh.
            record.raw_input = raw
            record.arguments = {"input": raw}
        else:
            record.input_missing = True
        step = self._current()
        step.tool_calls.append(record)
        if event.get("truncated") is True:
            step.truncated_events += 1

    def tool_result(self, event: dict[str, Any]) -> None:
        call_id = event.get("callId")
        result = event.get("result")
        if not isinstance(result, str):
            result = "" if result is None else json.dumps(result)
        status = event.get("status") if isinstance(event.get("status"), str) else None
        error = event.get("error") if isinstance(event.get("error"), dict) else None
        command = event.get("command") if isinstance(event.get("command"), dict) else None
        # The call is in the open step, or (a result that came late) in the latest step
        # that made it.
        candidates = ([self.open] if self.open is not None else []) + list(
            reversed(self.summary.steps)
        )
        for step in candidates:
            if step.kind != "agent" or not isinstance(call_id, str):
                continue
            record = step.call(call_id)
            if record is not None:
                record.result = result
                record.status = status
                record.error = error
                record.command = command
                if event.get("truncated") is True:
                    step.truncated_events += 1
                return
        self._current().stray_results.append(
            {"call_id": call_id, "result": result, "status": status}
        )

    def finish(self) -> StreamSummary:
        self.open = None
        return self.summary


def _is_failure(reason: Any) -> bool:
    return isinstance(reason, dict) and reason.get("kind") not in (
        None,
        "completed",
        "plan-submitted",
    )


def _reason_message(reason: dict[str, Any]) -> str:
    kind = reason.get("kind")
    if kind == "error" and isinstance(reason.get("error"), dict):
        err = reason["error"]
        code = err.get("code", "UNKNOWN")
        return f"dsh: the turn failed with {code}: {err.get('message', '')}".rstrip()
    if kind == "aborted" and isinstance(reason.get("reason"), dict):
        why = reason["reason"]
        detail = why.get("signal") or why.get("kind") or ""
        return f"dsh: the turn was aborted ({detail})"
    if isinstance(reason.get("message"), str):
        return f"dsh: the turn ended with {kind}: {reason['message']}"
    return f"dsh: the turn ended with {kind}"


def parse_lines(lines: Iterable[str]) -> StreamSummary:
    """Read a stream given as lines (with or without their newlines)."""
    parser = _Parser()
    for line in lines:
        parser.line(line)
    return parser.finish()


def parse_text(text: str) -> StreamSummary:
    return parse_lines(text.splitlines())


def parse_file(path: str | Path) -> StreamSummary:
    """Read a stream from a file; bytes that are not UTF-8 spoil only their own line."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse_lines(handle)


# --------------------------------------------------------------------------------------
# Harbor's AgentContext
# --------------------------------------------------------------------------------------


def context_fields(summary: StreamSummary) -> dict[str, Any]:
    """The values for Harbor's ``AgentContext``: ``n_input_tokens`` (every billed input
    token, cache reads and writes included), ``n_cache_tokens`` (cache reads),
    ``n_output_tokens`` (reasoning included), ``cost_usd`` (None when dsh had no prices
    for the model) and ``metadata``."""
    usage = summary.usage
    if summary.usage_source == "none" and not summary.errors:
        # Nothing says what was billed (an empty stream, a run killed before its first
        # step ended): unknown, not zero. A run stopped by an `error` event sent nothing.
        return {
            "n_input_tokens": None,
            "n_cache_tokens": None,
            "n_output_tokens": None,
            "cost_usd": None,
            "metadata": stream_metadata(summary),
        }
    return {
        "n_input_tokens": usage.prompt_tokens,
        "n_cache_tokens": usage.cache_read_tokens,
        "n_output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd,
        "metadata": stream_metadata(summary),
    }


def stream_metadata(summary: StreamSummary) -> dict[str, Any]:
    usage = summary.usage
    final = summary.final
    reason = summary.final_reason
    meta: dict[str, Any] = {
        "dsh_session_id": summary.session_id,
        "stream_schema_version": summary.stream_version,
        "completed": isinstance(reason, dict) and reason.get("kind") == "completed",
        "final_reason": reason,
        "has_final": final is not None,
        "usage_source": summary.usage_source,
        "uncached_input_tokens": usage.input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "unreported_calls": usage.unreported_calls,
        "model_requests": (
            sum(_count(f.get("steps")) for f in summary.finals)
            if summary.finals
            else summary.step_end_count
        ),
        "tool_calls": summary.tool_call_count,
        "lines": summary.line_count,
        "events": summary.event_count,
        "malformed_lines": summary.malformed_lines,
    }
    if final is not None:
        meta["duration_ms"] = _count(final.get("durationMs"))
    if summary.errors:
        meta["errors"] = summary.errors
        meta["error_code"] = summary.errors[-1]["code"]
    elif isinstance(reason, dict) and isinstance(reason.get("error"), dict):
        meta["error_code"] = reason["error"].get("code")
    if summary.malformed_samples:
        meta["malformed_samples"] = summary.malformed_samples
    if summary.skipped_types:
        meta["skipped_event_types"] = dict(summary.skipped_types)
    if summary.subagent_events:
        meta["subagent_events"] = dict(summary.subagent_events)
    if summary.truncated_events:
        meta["truncated_events"] = summary.truncated_events
    if summary.stream_version is not None and summary.stream_version not in KNOWN_STREAM_VERSIONS:
        meta["unknown_stream_version"] = True
    return meta


# --------------------------------------------------------------------------------------
# ATIF
# --------------------------------------------------------------------------------------


def _metrics(usage: Usage) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.output_tokens,
        "cached_tokens": usage.cache_read_tokens,
    }
    if usage.cost_usd is not None:
        metrics["cost_usd"] = usage.cost_usd
    extra = {
        "uncached_input_tokens": usage.input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }
    if usage.unreported_calls:
        extra["unreported_calls"] = usage.unreported_calls
    metrics["extra"] = extra
    return metrics


def _agent_step(step: StepRecord, step_id: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "step_id": step_id,
        "source": "agent",
        "message": "\n\n".join(step.texts),
    }
    if step.thinking:
        out["reasoning_content"] = "\n\n".join(step.thinking)
    if step.tool_calls:
        out["tool_calls"] = [
            {
                "tool_call_id": c.call_id,
                "function_name": c.tool,
                "arguments": c.arguments,
            }
            for c in step.tool_calls
        ]
    results = [
        {"source_call_id": c.call_id, "content": c.result}
        for c in step.tool_calls
        if c.result is not None
    ]
    results += [{"content": r["result"]} for r in step.stray_results]
    if results:
        out["observation"] = {"results": results}
    if step.usage is not None:
        out["metrics"] = _metrics(step.usage)
    extra: dict[str, Any] = {}
    if step.turn is not None:
        extra["turn"] = step.turn
    if step.step is not None:
        extra["dsh_step"] = step.step
    if not step.ended:
        extra["ended"] = False
    tool_results = []
    for c in step.tool_calls:
        info: dict[str, Any] = {"call_id": c.call_id}
        if c.status is not None:
            info["status"] = c.status
        if c.error is not None:
            info["error"] = c.error
        if c.command is not None:
            info["command"] = c.command
        if c.result is None:
            info["no_result"] = True
        if c.input_missing:
            info["input_missing"] = True
        if c.raw_input is not None:
            info["input_not_json"] = True
        tool_results.append(info)
    if tool_results:
        # In call order, as tool_calls: how each call ended beside its result text.
        extra["tool_results"] = tool_results
    if step.stray_results:
        extra["stray_results"] = [
            {"call_id": r["call_id"], "status": r["status"]} for r in step.stray_results
        ]
    if step.todos is not None:
        extra["todos"] = step.todos
    if step.truncated_events:
        extra["truncated_events"] = step.truncated_events
    if extra:
        out["extra"] = extra
    return out


def to_trajectory(
    summary: StreamSummary,
    *,
    instruction: str | None = None,
    agent_name: str = "dsh",
    agent_version: str | None = None,
    model_name: str | None = None,
    session_id: str | None = None,
) -> dict[str, Any] | None:
    """The ATIF trajectory of a stream, as plain data with Harbor's field names, or None
    when there is nothing to show (no instruction and no event).

    - The instruction, when given, is step 1 (``source: user``).
    - Each model request of the top agent is one ``agent`` step: its text blocks joined as
      ``message``, its thinking as ``reasoning_content``, its tool calls (``callId`` as
      ``tool_call_id``, ``tool`` as ``function_name``, ``input`` as ``arguments``), their
      results as the observation, and its ``step_end`` usage as ``metrics``.
    - A failed turn and each ``error`` event is a ``system`` step saying what failed.
    - ``final_metrics`` holds the run's usage (the same numbers as :func:`context_fields`).
    """
    steps: list[dict[str, Any]] = []
    if instruction is not None:
        steps.append({"step_id": 1, "source": "user", "message": instruction})
    for record in summary.steps:
        step_id = len(steps) + 1
        if record.kind == "system":
            item: dict[str, Any] = {
                "step_id": step_id,
                "source": "system",
                "message": record.message,
            }
            if record.detail:
                item["extra"] = record.detail
            steps.append(item)
        else:
            steps.append(_agent_step(record, step_id))
    if not steps:
        return None

    usage = summary.usage
    final_metrics: dict[str, Any] = {
        "total_prompt_tokens": usage.prompt_tokens,
        "total_completion_tokens": usage.output_tokens,
        "total_cached_tokens": usage.cache_read_tokens,
        "total_steps": len(steps),
    }
    if usage.cost_usd is not None:
        final_metrics["total_cost_usd"] = usage.cost_usd
    fm_extra: dict[str, Any] = {
        "uncached_input_tokens": usage.input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "usage_source": summary.usage_source,
    }
    if usage.unreported_calls:
        fm_extra["unreported_calls"] = usage.unreported_calls
    final_metrics["extra"] = fm_extra

    agent: dict[str, Any] = {"name": agent_name, "version": agent_version or "unknown"}
    if model_name:
        agent["model_name"] = model_name

    meta = stream_metadata(summary)
    extra = {
        key: meta[key]
        for key in (
            "final_reason",
            "model_requests",
            "duration_ms",
            "malformed_lines",
            "malformed_samples",
            "skipped_event_types",
            "subagent_events",
            "truncated_events",
            "stream_schema_version",
        )
        if key in meta and meta[key] is not None
    }
    if summary.cwd is not None:
        extra["cwd"] = summary.cwd
    final = summary.final
    if final is not None and isinstance(final.get("text"), str):
        extra["final_text"] = final["text"]

    trajectory: dict[str, Any] = {
        "schema_version": ATIF_SCHEMA_VERSION,
        "session_id": session_id or summary.session_id or "dsh-unknown-session",
        "agent": agent,
        "steps": steps,
        "final_metrics": final_metrics,
        "extra": {"dsh": extra},
    }
    notes = []
    if summary.subagent_events:
        notes.append(
            "Subagent events are not steps here; their usage is inside the parent's steps."
        )
    if summary.usage_source == "step_end":
        notes.append("The stream has no final event; totals are the sum of the steps that ended.")
    if notes:
        trajectory["notes"] = " ".join(notes)
    return trajectory
