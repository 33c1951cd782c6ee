"""A background thread that handles what waits on its queue in batches: the request log
(requestlog.py) and the group-committing writer (writer.py) are both one of these."""

from __future__ import annotations

import queue
import threading

_STOP = object()


class BatchThread:
    """Items put on the queue are handed to `_handle(items)` together, as many as are waiting
    (up to `max_batch`), on one daemon thread started by the first `_put`. `stop()` handles
    what is queued, then ends the thread; a later `_put` starts it again."""

    thread_name = "rebuttal-batch"

    def __init__(self, max_batch: int, max_queued: int = 0):
        self.max_batch = max_batch
        self._queue: queue.Queue = queue.Queue(max_queued)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _handle(self, items: list) -> None:
        raise NotImplementedError

    def _put(self, item) -> None:
        """Queue an item without blocking (queue.Full when a bounded queue is full)."""
        if self._thread is None or not self._thread.is_alive():
            with self._lock:
                if self._thread is None or not self._thread.is_alive():
                    self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
                    self._thread.start()
        self._queue.put_nowait(item)

    def stop(self, timeout: float = 10.0) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            thread.join(timeout)

    def _loop(self) -> None:
        while True:
            taken = [self._queue.get()]
            while len(taken) < self.max_batch:
                try:
                    taken.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            items = [item for item in taken if item is not _STOP]
            try:
                if items:
                    self._handle(items)
            finally:
                for _ in taken:
                    self._queue.task_done()
            if len(items) < len(taken):
                return
