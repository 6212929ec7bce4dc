"""Newline-delimited JSON, both ways: lines from an asyncio StreamReader with an honest line
limit, and one message as one line.

Why not `StreamReader.readline()`: its limit is the reader's `limit` — 64 KiB unless the code
that built the reader said otherwise — and a longer line raises `ValueError` after dropping what
was buffered, so the rest of that line comes back as a "line" of its own. A 64 KiB limit is
nothing for an agent runtime (one tool result or file read is easily a megabyte), and a host
that dies on it, or silently reads half a frame as garbage, fails for reasons that have nothing
to do with the child. So this module reads chunks, splits them itself and holds a line up to
`max_line_bytes` (64 MiB here: far above any real frame, and still a bound on what a runaway
child can make the host hold). A longer line is *reported* (`LineTooLong`, with its size) and
skipped without being held; the caller decides what that means.

Bytes become text only per complete line: a multi-byte UTF-8 character split across two reads
is decoded whole. A `\\r` before the `\\n` is dropped (CRLF line ends); a last line without
`\\n` at EOF is still a line, as Node's readline has it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

MAX_LINE_BYTES = 64 * 1024 * 1024
CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True)
class LineTooLong:
    """A line longer than the limit; `size` is its length in bytes (without the `\\n`)."""

    size: int


async def read_lines(
    stream: asyncio.StreamReader, max_line_bytes: int = MAX_LINE_BYTES
) -> AsyncIterator[str | LineTooLong]:
    """Yields each line (decoded; invalid UTF-8 bytes become U+FFFD) until EOF.

    A read error propagates (after the lines read before it).
    """
    buffer = bytearray()
    scanned = 0  # no "\n" in buffer[:scanned]: each byte is searched once
    skipping: int | None = None  # bytes of an over-long line dropped so far

    while True:
        chunk = await stream.read(CHUNK_BYTES)
        if not chunk:
            break
        if skipping is not None:
            newline = chunk.find(b"\n")
            if newline < 0:
                skipping += len(chunk)
                continue
            yield LineTooLong(skipping + newline)
            skipping = None
            chunk = chunk[newline + 1 :]
        buffer += chunk

        start = 0
        while True:
            newline = buffer.find(b"\n", scanned)
            if newline < 0:
                break
            if newline - start > max_line_bytes:
                yield LineTooLong(newline - start)
            else:
                yield _decode(buffer[start:newline])
            start = scanned = newline + 1
        del buffer[:start]
        scanned = len(buffer)
        if len(buffer) > max_line_bytes:
            skipping = len(buffer)
            buffer.clear()
            scanned = 0

    if skipping is not None:
        yield LineTooLong(skipping)
    elif buffer:
        yield _decode(buffer)


def _decode(line: bytearray) -> str:
    if line.endswith(b"\r"):
        del line[-1:]
    return line.decode("utf-8", errors="replace")


def encode(message: Any) -> bytes:
    """One message as one line of compact JSON, `\\n`-terminated, UTF-8.

    Text that UTF-8 cannot carry (a lone surrogate, which a `\\ud800` escape in the input decodes
    to) is written as JSON escapes instead, as JavaScript's `JSON.stringify` does.
    """
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(message, separators=(",", ":")).encode("ascii")
    return data + b"\n"


def decode(line: str) -> Any:
    """`json.loads`, minus what JSON itself does not have (`NaN`, `Infinity`); raises ValueError."""
    return json.loads(line, parse_constant=_not_json)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
