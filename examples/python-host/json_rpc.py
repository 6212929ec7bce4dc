"""Newline-delimited JSON-RPC 2.0 over a child's stdin/stdout: what an ACP client needs, no more.

Inbound frames are handled in wire order, one line at a time: a notification that precedes a
response is always handled before the response's future settles. Requests the child sends us
are answered synchronously, so an answer is always written before anything the host does next
(a session/cancel, closing stdin).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

import ndjson

# `{"result": …}` or `{"error": {"code": …, "message": …, "data"?: …}}`
Reply = dict[str, Any]
OnRequest = Callable[[str, dict[str, Any]], Reply]
OnNotification = Callable[[str, dict[str, Any]], None]


class RpcError(Exception):
    """Why a request got no result: the peer answered an error, or the wire was lost."""

    def __init__(
        self,
        kind: Literal["remote", "wire-lost"],
        message: str,
        *,
        code: Any = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code
        self.data = data


def _id_key(value: Any) -> str:
    """The key a response's id is matched by: its JSON text (an integral float is its integer)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return ndjson.encode(value).decode("utf-8")


class JsonRpcConnection:
    def __init__(
        self,
        *,
        input: asyncio.StreamReader,  # the child's stdout
        output: asyncio.StreamWriter,  # the child's stdin
        on_request: OnRequest,
        on_notification: OnNotification,
        on_garbage: Callable[[str], None],  # a line that is not a JSON-RPC message (host log)
    ) -> None:
        self._output = output
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_garbage = on_garbage
        self._next_id = 0  # ids 0, 1, 2, … as the ACP SDK numbers them
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self.lost: str | None = None  # why the wire is lost, once it is
        self._stdin_closed = False
        self._reader = asyncio.create_task(self._read(input))

    def is_open(self) -> bool:
        """Both directions still usable."""
        return self.lost is None and not self._stdin_closed

    def request(self, method: str, params: Any) -> asyncio.Future[Any]:
        """The answer's future: its result, or an RpcError."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self.is_open():
            answer.set_exception(RpcError("wire-lost", self.lost or "stdin closed"))
            return answer
        request_id = self._next_id
        self._next_id += 1
        self._pending[_id_key(request_id)] = answer
        self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return answer

    def notify(self, method: str, params: Any) -> bool:
        """A notification; False when the wire is no longer usable."""
        if not self.is_open():
            return False
        self._write({"jsonrpc": "2.0", "method": method, "params": params})
        return True

    def close_stdin(self) -> None:
        """Closes the child's stdin: the EOF that asks it to exit. Idempotent."""
        if self._stdin_closed:
            return
        self._stdin_closed = True
        self._output.close()  # what is still buffered is written first, then the EOF

    def lose_wire(self, reason: str) -> None:
        """Fails every pending request: stdout reached EOF, a write failed, or the child is gone."""
        if self.lost is not None:
            return
        self.lost = reason
        pending, self._pending = self._pending, {}
        for answer in pending.values():
            if not answer.done():
                answer.set_exception(RpcError("wire-lost", reason))

    def _write(self, frame: dict[str, Any]) -> None:
        if self._output.is_closing():
            # We did not close it (callers check), so the child's end is gone: what a write
            # to it would say (EPIPE).
            self.lose_wire("write failed: the child's stdin is closed")
            return
        self._output.write(ndjson.encode(frame))

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        try:
            async for line in ndjson.read_lines(stdout):
                if isinstance(line, ndjson.LineTooLong):
                    # Not held, so not read: a frame we skipped could be the answer a request
                    # waits for. The wire is lost; the rest is still drained, so EOF is seen.
                    self.lose_wire(f"a frame of {line.size} bytes, over the host's limit")
                    continue
                self._dispatch(line)
        except Exception as error:  # a read error: the wire is lost all the same
            self.lose_wire(f"stdout read failed: {error!r}")
            return
        self.lose_wire("stdout reached EOF")

    def _dispatch(self, line: str) -> None:
        if line.strip() == "":
            return
        try:
            msg = ndjson.decode(line)
        except ValueError:
            self._on_garbage(line)
            return
        if not isinstance(msg, dict):
            self._on_garbage(line)
            return
        method = msg.get("method")
        method = method if isinstance(method, str) else None
        has_id = msg.get("id") is not None
        raw_params = msg.get("params")
        params = raw_params if isinstance(raw_params, dict) else {}

        if method is not None and has_id:
            reply = self._on_request(method, params)
            # An answer to a child that is already gone is dropped; the run sees the loss elsewhere.
            if not self._stdin_closed:
                self._write({"jsonrpc": "2.0", "id": msg["id"], **reply})
        elif method is not None:
            self._on_notification(method, params)
        elif has_id and _id_key(msg["id"]) in self._pending:
            answer = self._pending.pop(_id_key(msg["id"]))
            if answer.done():
                return
            if "error" in msg:
                error = msg["error"] if isinstance(msg["error"], dict) else {}
                message = error.get("message")
                answer.set_exception(
                    RpcError(
                        "remote",
                        message if isinstance(message, str) else "JSON-RPC error",
                        code=error.get("code"),
                        data=error.get("data"),
                    )
                )
            else:
                answer.set_result(msg.get("result"))
        else:
            self._on_garbage(line)
