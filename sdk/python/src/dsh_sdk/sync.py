"""The same client for code without asyncio: each call runs the asyncio client on a loop of
its own, in the calling thread."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Dict, Iterator, Optional, TypeVar

from .client import Dsh
from .events import Event
from .types import RewindReport, TurnResult

T = TypeVar("T")


class DshSync:
    """`with DshSync(cwd=..., mode=...) as run: for event in run.send(task): ...`. Takes the
    arguments of `Dsh`; handlers are plain functions."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._loop = asyncio.new_event_loop()
        self._dsh = Dsh(*args, **kwargs)

    def _run(self, work: Awaitable[T]) -> T:
        return self._loop.run_until_complete(work)

    def __enter__(self) -> "DshSync":
        try:
            self._run(self._dsh.__aenter__())
        except BaseException:
            self._loop.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._dsh.aclose())
        finally:
            self._loop.close()

    @property
    def session_id(self) -> Optional[str]:
        return self._dsh.session_id

    @property
    def result(self) -> Optional[TurnResult]:
        return self._dsh.result

    def open(self, **kwargs: Any) -> str:
        return self._run(self._dsh.open(**kwargs))

    def send(self, text: str) -> Iterator[Event]:
        turn = self._dsh.send(text)
        try:
            while True:
                try:
                    yield self._run(turn.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._run(turn.aclose())

    def run(self, text: str) -> TurnResult:
        return self._run(self._dsh.run(text))

    def interrupt(self) -> bool:
        return self._run(self._dsh.interrupt())

    def set(self, **kwargs: Any) -> Dict[str, Any]:
        return self._run(self._dsh.set(**kwargs))

    def rewind(self, turn: Optional[int] = None, *, files: bool = True,
               conversation: bool = True, force: bool = False,
               apply: bool = True) -> RewindReport:
        return self._run(self._dsh.rewind(turn, files=files, conversation=conversation,
                                          force=force, apply=apply))

    def call(self, message: Dict[str, Any]) -> Dict[str, Any]:
        return self._run(self._dsh.call(message))
