"""Streamed responses: the host's stream behind a proxy that folds each chunk into the model
call's span and ends that span exactly once, however the host stops reading.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import wrapt

from .._guard import capture_internal_exceptions

if TYPE_CHECKING:
    from ._genai import ModelCall


class Accumulator:
    """Folds a stream's chunks into the keyword arguments of :meth:`ModelCall.finish`."""

    stream: Any = None
    """The host's stream object, for SDKs whose helpers read it around the proxy."""

    def on_chunk(self, chunk: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def result(self) -> dict[str, Any]:  # pragma: no cover - interface
        raise NotImplementedError

    complete = False
    """The stream's final event arrived, so closing it early cut nothing off."""


class _StreamProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """What both proxies share: the call, the accumulator, and ending the span once."""

    def __init__(self, wrapped: Any, call: ModelCall, acc: Accumulator) -> None:
        super().__init__(wrapped)
        self._self_call = call
        self._self_acc = acc
        self._self_it: Any = None
        self._self_done = False

    def _self_end(self, exc: BaseException | None = None, incomplete: bool = False) -> None:
        if self._self_done:
            return
        self._self_done = True
        with capture_internal_exceptions("stream.end"):
            call = self._self_call
            try:
                if exc is not None:
                    call.fail(exc)
                else:
                    call.finish(**self._self_acc.result(), incomplete=incomplete and not self._self_acc.complete)
            finally:
                call.abandon()

    def __del__(self) -> None:
        # Broken out of and dropped: record what arrived, marked incomplete.
        if not getattr(self, "_self_done", True):
            self._self_end(incomplete=True)


class SyncStreamProxy(_StreamProxy):
    """The host's stream, unchanged, with the span ended exactly once.

    Ends on exhaustion, ``close()``, ``__exit__``, a mid-stream error, or (broken out of and
    dropped) when garbage-collected. ``__enter__`` returns the proxy, not the bare stream, so
    ``with client.create(stream=True) as s:`` stays observed.
    """

    def __iter__(self) -> SyncStreamProxy:
        return self

    def __next__(self) -> Any:
        try:
            if self._self_it is None:
                self._self_it = iter(self.__wrapped__)
            chunk = next(self._self_it)
        except StopIteration:
            self._self_end()
            raise
        except BaseException as exc:
            self._self_end(exc)
            raise
        if not self._self_done:
            with capture_internal_exceptions("stream.chunk"):
                self._self_acc.on_chunk(chunk)
        return chunk

    def __enter__(self) -> SyncStreamProxy:
        enter = getattr(self.__wrapped__, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            leave = getattr(self.__wrapped__, "__exit__", None)
            return leave(exc_type, exc, tb) if leave is not None else None
        finally:
            self._self_end(exc, incomplete=exc is None)

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_end(incomplete=True)


class AsyncStreamProxy(_StreamProxy):
    """The async twin of :class:`SyncStreamProxy` (``async for``, ``async with``, ``aclose``)."""

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        try:
            if self._self_it is None:
                self._self_it = self.__wrapped__.__aiter__()
            chunk = await self._self_it.__anext__()
        except StopAsyncIteration:
            self._self_end()
            raise
        except BaseException as exc:
            self._self_end(exc)
            raise
        if not self._self_done:
            with capture_internal_exceptions("stream.chunk"):
                self._self_acc.on_chunk(chunk)
        return chunk

    async def __aenter__(self) -> AsyncStreamProxy:
        enter = getattr(self.__wrapped__, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            leave = getattr(self.__wrapped__, "__aexit__", None)
            return await leave(exc_type, exc, tb) if leave is not None else None
        finally:
            self._self_end(exc, incomplete=exc is None)

    async def close(self) -> Any:
        try:
            result = self.__wrapped__.close()
            if inspect.isawaitable(result):
                result = await result
            return result
        finally:
            self._self_end(incomplete=True)

    async def aclose(self) -> Any:
        try:
            return await self.__wrapped__.aclose()
        finally:
            self._self_end(incomplete=True)
