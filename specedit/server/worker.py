"""One generation at a time: the worker thread, its queue, and a request's wait or stream.

A client that disconnects cancels its generation, queued or running.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import StreamingResponse

from specedit.server.errors import APIError

CANCELLED = "cancelled"  # the stop reason of a generation whose client went away
MAX_QUEUE = 8  # generations that may wait behind the running one
RETRY_AFTER_S = 10  # what a 429 advises: a generation on a CPU takes seconds to minutes


@dataclass
class Job:
    """A generation's link to its client: steps go out through `emit`, `cancel` stops it."""

    emit: Callable[[Any], None]
    cancel: threading.Event


class Worker:
    """Runs generations one at a time, in order, off the event loop, and counts them; at most
    `max_queue` wait behind the running one."""

    def __init__(self, max_queue: int = MAX_QUEUE) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specedit-generate")
        self.counts = {"queued": 0, "running": 0, "done": 0, "cancelled": 0}
        self.max_queue = max_queue
        self._lock = threading.Lock()

    def _count(self, **changes: int) -> None:
        with self._lock:
            for key, change in changes.items():
                self.counts[key] += change

    def submit(self, work: Callable[[], Any], job: Job) -> asyncio.Future:
        """Queue `work`; APIError 429 when `max_queue` generations already wait."""
        with self._lock:
            if self.counts["queued"] + self.counts["running"] > self.max_queue:
                raise APIError(
                    429,
                    f"the server is busy: {self.max_queue} generations are waiting "
                    "already; retry later",
                    code="rate_limit_exceeded",
                    headers={"Retry-After": str(RETRY_AFTER_S)},
                )
            self.counts["queued"] += 1

        def run() -> Any:
            self._count(queued=-1, running=1)
            try:
                return None if job.cancel.is_set() else work()  # its client may have left
            finally:
                self._count(running=-1, done=1, cancelled=int(job.cancel.is_set()))

        return asyncio.wrap_future(self._pool.submit(run))


def job_stop(job: Job, inner: Callable[[int], Any] | None = None) -> Callable[[int], Any]:
    """A generation's stop condition: its client left, or `inner` says stop."""

    def stop(token: int) -> Any:
        if job.cancel.is_set():
            return CANCELLED
        return inner(token) if inner else None

    return stop


@dataclass
class Run:
    """A prepared generation: `start(job)` runs it in the worker thread."""

    start: Callable[[Job], Any]
    id: str


async def wait(worker: Worker, request: Request, run: Run) -> Any:
    """Run to the end, cancelling if the client disconnects meanwhile."""
    job = Job(lambda _: None, threading.Event())
    future = worker.submit(lambda: run.start(job), job)
    while True:
        try:
            result = await asyncio.wait_for(asyncio.shield(future), 0.25)
        except TimeoutError:
            if await request.is_disconnected():
                job.cancel.set()
            continue
        except Exception as exc:  # logged here, before the client hears of it
            raise APIError.of(exc) from None
        if isinstance(result, APIError):
            raise result
        return result


class _GenerationStream(StreamingResponse):
    """Server-sent events that call `on_close` once the response ends, however it ends: a
    client that leaves even before the first event is sent is noticed."""

    def __init__(self, content: AsyncIterator[str], on_close: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream")
        self.on_close = on_close

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.on_close()


def stream(worker: Worker, request: Request, run: Run, render) -> StreamingResponse:
    """Server-sent events: `render(item)` turns what the generation emits into SSE data lines;
    a client that goes away cancels the generation. The generation is queued now, so a full
    queue is a 429 rather than an error inside a stream that has begun."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    job = Job(
        lambda item: loop.call_soon_threadsafe(queue.put_nowait, ("item", item)), threading.Event()
    )
    ended = threading.Event()  # the generation's end reached the stream

    def work() -> None:
        try:
            result = run.start(job)
        except BaseException as exc:  # reported to the client, never lost in the thread
            result = exc
        loop.call_soon_threadsafe(queue.put_nowait, ("end", result))

    async def events() -> AsyncIterator[str]:
        while True:
            what, item = await queue.get()
            for data in render(what, item):
                yield f"data: {data}\n\n"
            if what == "end":
                ended.set()
                break
        yield "data: [DONE]\n\n"

    def close() -> None:
        if not ended.is_set():
            job.cancel.set()

    worker.submit(work, job)
    return _GenerationStream(events(), close)
