"""The asyncio client: one `dsh app-server` process, one session open at a time.

Lines from the server are read by one task: responses resolve the message they answer, the
server's requests go to the host's handlers, and events go to the turn being iterated.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shutil
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional, Sequence, Union

from .events import Event, FinalEvent, parse_event
from .tools import Tool
from .types import (
    Approval, ApprovalRequest, DshError, FormRequest, QuestionsRequest, RewindReport, TurnError,
    TurnResult, read_request,
)

ApprovalHandler = Callable[[ApprovalRequest], Union[str, Approval, Awaitable[Union[str, Approval]]]]
QuestionsHandler = Callable[[QuestionsRequest], Any]
FormHandler = Callable[[FormRequest], Any]

# The final event's text is not bounded; a line may be long.
_LINE_LIMIT = 64 * 1024 * 1024
# dsh app-server refuses a line over 16 MiB: a host tool's output is kept under it, with room
# for the rest of the answer.
_OUTPUT_LIMIT = 16 * 1024 * 1024 - 1024


def find_binary(given: Optional[str] = None) -> str:
    """The dsh binary: `given`, else $DSH_BIN, else `dsh` on PATH."""
    for candidate in (given, os.environ.get("DSH_BIN")):
        if candidate:
            return candidate
    found = shutil.which("dsh")
    if found:
        return found
    raise DshError("BINARY_NOT_FOUND", "no dsh binary: pass bin=, set DSH_BIN, or put dsh on PATH")


async def _called(handler: Callable[..., Any], argument: Any) -> Any:
    answer = handler(argument)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


class Dsh:
    """dsh driven from asyncio. `async with Dsh(cwd=..., mode=...) as run:` starts the server
    and opens a session (`resume=` or `fork=` an existing one); `run.send(task)` yields the
    turn's events and leaves its result in `run.result`.

    Handlers answer what the run asks: `on_approval` returns "once", "session", "deny" or an
    `Approval`; `on_questions` a dict from question id to label(s), or None to skip; `on_form`
    the form's content, or None to decline. Without a handler, approvals are denied, questions
    skipped and forms declined. A handler may be a coroutine function.

    `tools` are host tools (`@tool` functions): offered to the model in every session this
    client opens, and run here when the model calls them.
    """

    def __init__(
        self,
        cwd: Optional[str] = None,
        mode: Optional[str] = None,
        model: Optional[str] = None,
        *,
        resume: Optional[str] = None,
        fork: Optional[str] = None,
        bin: Optional[str] = None,
        args: Sequence[str] = (),
        env: Optional[Dict[str, str]] = None,
        on_approval: Optional[ApprovalHandler] = None,
        on_questions: Optional[QuestionsHandler] = None,
        on_form: Optional[FormHandler] = None,
        tools: Sequence[Tool] = (),
    ):
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.mode, self.model, self.resume, self.fork = mode, model, resume, fork
        self.bin, self.args, self.env = bin, list(args), env
        self.on_approval, self.on_questions, self.on_form = on_approval, on_questions, on_form
        self.tools = {t.name: t for t in tools}
        self.session_id: Optional[str] = None
        self.result: Optional[TurnResult] = None
        self.version: Optional[str] = None
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._reader: Optional["asyncio.Task[None]"] = None
        self._ready: Optional["asyncio.Future[Dict[str, Any]]"] = None
        self._waiting: Dict[int, "asyncio.Future[Dict[str, Any]]"] = {}
        self._turn: Optional[tuple] = None
        self._answering: set = set()
        self._handler_error: Optional[BaseException] = None
        self._next_id = 0

    async def __aenter__(self) -> "Dsh":
        await self.start()
        try:
            await self.open(resume=self.resume, fork=self.fork, mode=self.mode, model=self.model)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Starts `dsh app-server` and waits for its `ready` line."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._proc = await asyncio.create_subprocess_exec(
            find_binary(self.bin), "app-server", *self.args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            cwd=self.cwd, env=self.env, limit=_LINE_LIMIT,
        )
        self._reader = asyncio.ensure_future(self._read())
        ready = await self._ready
        self.version = ready.get("version")

    async def open(self, *, resume: Optional[str] = None, fork: Optional[str] = None,
                   mode: Optional[str] = None, model: Optional[str] = None,
                   cwd: Optional[str] = None) -> str:
        """Opens a session (closing the one open): new, resumed or forked. Returns its id."""
        message: Dict[str, Any] = {"type": "open", "cwd": os.path.abspath(cwd or self.cwd)}
        if self.tools:
            message["tools"] = [t.declaration() for t in self.tools.values()]
        for name, value in (("resume", resume), ("fork", fork), ("mode", mode), ("model", model)):
            if value is not None:
                message[name] = value
        result = await self.call(message)
        self.session_id = result["sessionId"]
        return self.session_id

    async def send(self, text: str) -> AsyncIterator[Event]:
        """Runs a turn, yielding its events; `self.result` holds how it ended. A turn that
        failed raises `TurnError`; leaving the loop early interrupts the turn."""
        if self._turn is not None:
            raise DshError("BUSY", "a turn is running: finish iterating it first")
        queue: "asyncio.Queue[Any]" = asyncio.Queue()
        message_id = self._write({"type": "send", "text": text})
        self._turn = (message_id, queue)
        self._handler_error = None
        final: Optional[FinalEvent] = None
        done = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                if item.get("type") == "response":
                    done = True
                    if "error" in item:
                        raise DshError.from_wire(item["error"])
                    result = item["result"]
                    self.result = TurnResult(result.get("reason", {}), result.get("text", ""), final)
                    break
                event = parse_event(item)
                if isinstance(event, FinalEvent):
                    final = event
                yield event
        finally:
            if not done and self._proc is not None and self._proc.returncode is None:
                # Left early: the turn is stopped, and its lines read to its end.
                self._write({"type": "interrupt"})
                while True:
                    item = await queue.get()
                    if isinstance(item, BaseException) or item.get("type") == "response":
                        break
            self._turn = None
        if self._handler_error is not None:
            raise self._handler_error
        reason = self.result.reason
        if reason.get("kind") == "error":
            error = reason.get("error", {})
            raise TurnError(str(error.get("code", "ERROR")), str(error.get("message", "")), self.result)

    async def run(self, text: str) -> TurnResult:
        """Runs a turn to its end and returns its result."""
        async for _ in self.send(text):
            pass
        assert self.result is not None
        return self.result

    async def interrupt(self) -> bool:
        """Stops the running turn; False when none was running."""
        result = await self.call({"type": "interrupt"})
        return bool(result.get("interrupted"))

    async def set(self, *, mode: Optional[str] = None, model: Optional[str] = None) -> Dict[str, Any]:
        """Another permission mode or model for the next turns (between turns)."""
        message: Dict[str, Any] = {"type": "set"}
        if mode is not None:
            message["mode"] = mode
        if model is not None:
            message["model"] = model
        return await self.call(message)

    async def rewind(self, turn: Optional[int] = None, *, files: bool = True,
                     conversation: bool = True, force: bool = False,
                     apply: bool = True) -> RewindReport:
        """Takes the session back to the start of `turn` (its files, its conversation, or
        both), between turns; without `turn`, undoes the last rewind. `apply=False` only says
        what it would do; `force=True` goes over files changed outside dsh. A turn it cannot go
        back to raises `DshError` with code REWIND_TARGET, files changed outside
        CHANGED_OUTSIDE."""
        message: Dict[str, Any] = {"type": "rewind", "files": files,
                                   "conversation": conversation, "force": force,
                                   "apply": apply}
        if turn is not None:
            message["turn"] = turn
        return RewindReport.from_wire(await self.call(message))

    async def call(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """Sends one message and returns its response's result; raises `DshError` on an
        error response. For messages this class has no method for."""
        future = asyncio.get_running_loop().create_future()
        self._write(message, future)
        response = await future
        if "error" in response:
            raise DshError.from_wire(response["error"])
        return response.get("result", {})

    async def aclose(self) -> None:
        """Closes stdin (the server stops what runs and exits) and waits for the process."""
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        await proc.wait()
        if self._reader is not None:
            await self._reader
        self._proc = None

    def _write(self, message: Dict[str, Any], future: Any = None) -> int:
        self._next_id += 1
        message = dict(message, id=self._next_id)
        if future is not None:
            self._waiting[self._next_id] = future
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            raise DshError("PROCESS_EXITED", "dsh app-server is not running")
        proc.stdin.write((json.dumps(message) + "\n").encode())
        return self._next_id

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        while True:
            line = await self._proc.stdout.readline()
            if not line:
                break
            try:
                message = json.loads(line)
            except ValueError:
                continue
            self._dispatch(message)
        code = await self._proc.wait()
        gone = DshError("PROCESS_EXITED", f"dsh app-server exited with status {code}")
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(gone)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(gone)
        self._waiting.clear()
        if self._turn is not None:
            self._turn[1].put_nowait(gone)

    def _dispatch(self, message: Dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "ready" and self._ready is not None and not self._ready.done():
            self._ready.set_result(message)
        elif kind == "response":
            if self._turn is not None and message.get("id") == self._turn[0]:
                self._turn[1].put_nowait(message)
                return
            future = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(message)
        elif kind == "request":
            task = asyncio.ensure_future(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif kind == "withdrawn":
            pass
        elif self._turn is not None:
            self._turn[1].put_nowait(message)

    async def _answer(self, message: Dict[str, Any]) -> None:
        if message.get("kind") == "tool":
            return await self._run_tool(message)
        request = read_request(message)
        answer: Dict[str, Any] = {"type": "answer", "request": request.id}
        try:
            answer.update(await self._reply(request))
        except Exception as error:  # the handler's failure ends the turn's iteration
            self._handler_error = error
            answer.update(_refusal(request))
        try:
            self._write(answer)
        except DshError:
            pass

    async def _run_tool(self, message: Dict[str, Any]) -> None:
        answer: Dict[str, Any] = {"type": "answer", "request": message["id"]}
        tool = self.tools.get(message.get("tool", ""))
        try:
            if tool is None:
                raise LookupError(f"this client has no tool {message.get('tool')!r}")
            output = await tool.run(message.get("input") or {})
            size = len(json.dumps(output).encode())
            if size > _OUTPUT_LIMIT:
                raise ValueError(f"the tool's output is {size} bytes, over the "
                                 f"{_OUTPUT_LIMIT} one answer may carry: return less, or "
                                 "write it to a file and return its path")
            answer["output"] = output
        except Exception as error:  # the model reads the failure as the call's error
            answer["error"] = f"{type(error).__name__}: {error}"
        try:
            self._write(answer)
        except DshError:
            pass

    async def _reply(self, request: Any) -> Dict[str, Any]:
        if isinstance(request, ApprovalRequest):
            if self.on_approval is None:
                return {"choice": "deny", "reason": "the host has no approval handler"}
            chosen = await _called(self.on_approval, request)
            if isinstance(chosen, Approval):
                reply = {"choice": chosen.choice}
                if chosen.reason:
                    reply["reason"] = chosen.reason
                return reply
            return {"choice": str(chosen)}
        if isinstance(request, QuestionsRequest):
            given = None if self.on_questions is None else await _called(self.on_questions, request)
            if given is None:
                return {"cancel": True}
            answers = []
            for question_id, chosen in dict(given).items():
                if isinstance(chosen, dict):
                    answers.append(dict(chosen, id=question_id))
                elif isinstance(chosen, str):
                    answers.append({"id": question_id, "selected": [chosen]})
                else:
                    answers.append({"id": question_id, "selected": list(chosen)})
            return {"answers": answers}
        content = None if self.on_form is None else await _called(self.on_form, request)
        if content is None:
            return {"action": "decline"}
        return {"action": "accept", "content": dict(content)}


def _refusal(request: Any) -> Dict[str, Any]:
    if isinstance(request, ApprovalRequest):
        return {"choice": "deny", "reason": "the host's approval handler failed"}
    if isinstance(request, QuestionsRequest):
        return {"cancel": True}
    return {"action": "cancel"}
