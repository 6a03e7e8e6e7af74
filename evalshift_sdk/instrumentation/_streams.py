"""Streamed responses: the host's stream behind a proxy that folds each chunk into the model
call's span and ends that span exactly once, however the host stops reading.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
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


class _Ending:
    """A stream's model call and accumulator, and whether its span has ended: shared by the
    proxy and its chunk generator, neither of which keeps the other alive. The host may hold
    either one (``it = iter(stream)`` keeps only the generator); when both are dropped
    half-read, this goes too, and the span ends with what arrived, marked incomplete.
    """

    __slots__ = ("call", "acc", "done")

    def __init__(self, call: ModelCall, acc: Accumulator) -> None:
        self.call = call
        self.acc = acc
        self.done = False

    def end(self, exc: BaseException | None = None, incomplete: bool = False) -> None:
        if self.done:
            return
        self.done = True
        with capture_internal_exceptions("stream.end"):
            call = self.call
            try:
                if exc is not None:
                    call.fail(exc)
                else:
                    call.finish(**self.acc.result(), incomplete=incomplete and not self.acc.complete)
            finally:
                call.abandon()

    def __del__(self) -> None:
        if not self.done:
            self.end(incomplete=True)


_CHUNK_GUARD = capture_internal_exceptions("stream.chunk")


def _observed(chunks: Iterator[Any], ending: _Ending) -> Iterator[Any]:
    """The host's chunks, each folded into the accumulator on its way past; the span ends when
    the stream does. A generator: resuming one costs a fraction of a Python ``__next__``."""
    fold = ending.acc.on_chunk
    while True:
        try:
            chunk = next(chunks)
        except StopIteration:
            ending.end()
            return
        except BaseException as exc:
            ending.end(exc)
            raise
        try:
            fold(chunk)
        except Exception as exc:  # the guard's rule, without a with-block per chunk
            if not _CHUNK_GUARD.__exit__(type(exc), exc, exc.__traceback__):
                raise
        yield chunk


class _StreamProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """What both proxies share: the call, the accumulator, and ending the span once."""

    def __init__(self, wrapped: Any, call: ModelCall, acc: Accumulator) -> None:
        super().__init__(wrapped)
        self._self_ending = _Ending(call, acc)
        self._self_it: Any = None

    def _self_end(self, exc: BaseException | None = None, incomplete: bool = False) -> None:
        self._self_ending.end(exc, incomplete)


class SyncStreamProxy(_StreamProxy):
    """The host's stream, unchanged, with the span ended exactly once.

    Ends on exhaustion, ``close()``, ``__exit__``, a mid-stream error, or (broken out of and
    dropped) when garbage-collected. ``__enter__`` returns the proxy, not the bare stream, so
    ``with client.create(stream=True) as s:`` stays observed. Iterating it (like iterating
    the provider's stream) gives a generator over the stream; ``next()`` reads the same one.
    """

    def __iter__(self) -> Iterator[Any]:
        it = self._self_it
        if it is None:
            it = self._self_it = _observed(iter(self.__wrapped__), self._self_ending)
        return it

    def __next__(self) -> Any:
        return next(self.__iter__())

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
        ending = self._self_ending
        if not ending.done:
            with _CHUNK_GUARD:
                ending.acc.on_chunk(chunk)
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
