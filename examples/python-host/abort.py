"""An abort signal, as the provider contract uses one (the records' `AbortSignal`).

asyncio's own tool for this, task cancellation, means something else: it unwinds the awaiting
code. An abort here is a *fact* the provider reads — before publication it rolls the child back
and rejects the start; after it, the result settles `aborted` at once and the provider's own
cancel goes on the wire — so the provider checks `aborted` and is called back, in order, the
moment it happens.
"""

from __future__ import annotations

from collections.abc import Callable


class AbortSignal:
    def __init__(self) -> None:
        self._aborted = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        """Aborts once; every callback registered so far is called now, in order."""
        if self._aborted:
            return
        self._aborted = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Calls `callback` once on abort (at once if already aborted); returns its remover."""
        if self._aborted:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove
