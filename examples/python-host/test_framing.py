"""The host's own tests of how it reads newline-delimited JSON (`python3 -m unittest` in this
folder): whole frames however the reads split them, far past asyncio's 64 KiB readline limit.

conform judges the host through the subject protocol; these pin the framing a host most often
gets wrong, directly and through the ACP provider with a scripted runtime.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import textwrap
import unittest

import ndjson
from abort import AbortSignal
from acp_provider import create_acp_provider

MIB = 1024 * 1024


async def collect(
    chunks: list[bytes], max_line_bytes: int = ndjson.MAX_LINE_BYTES
) -> list[str | ndjson.LineTooLong]:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return [line async for line in ndjson.read_lines(reader, max_line_bytes)]


class ReadLines(unittest.IsolatedAsyncioTestCase):
    async def test_frames_of_1_and_16_mib_are_read_whole(self) -> None:
        one, sixteen = b"a" * MIB, b"b" * (16 * MIB)
        lines = await collect([one + b"\n", sixteen[:5], sixteen[5:] + b"\n"])
        self.assertEqual([len(line) for line in lines if isinstance(line, str)], [MIB, 16 * MIB])

    async def test_a_character_split_across_reads_is_decoded_whole(self) -> None:
        data = '{"t":"h\u00e9llo \u2713 \U0001f600"}\n'.encode()
        for cut in range(1, len(data)):
            self.assertEqual(await collect([data[:cut], data[cut:]]), [data[:-1].decode()])
        # one byte per read
        self.assertEqual(await collect([bytes([b]) for b in data]), [data[:-1].decode()])

    async def test_several_frames_in_one_read_blank_lines_and_crlf(self) -> None:
        lines = await collect([b'{"a":1}\r\n\n{"b":2}\n  \n{"c":3}\r\n{"d"', b":4}"])
        self.assertEqual(lines, ['{"a":1}', "", '{"b":2}', "  ", '{"c":3}', '{"d":4}'])

    async def test_invalid_utf8_becomes_replacement_characters(self) -> None:
        self.assertEqual(await collect([b"a\xffb\n"]), ["a\ufffdb"])

    async def test_a_line_over_the_limit_is_reported_not_held_and_the_next_one_is_read(
        self,
    ) -> None:
        lines = await collect([b"x" * 10, b"x" * 10, b"x\nok\n", b"y" * 30 + b"\nfine"], 16)
        self.assertEqual(lines, [ndjson.LineTooLong(21), "ok", ndjson.LineTooLong(30), "fine"])


# A scripted ACP runtime whose stdout is everything a careless reader falls over: a non-JSON line,
# blank lines, CRLF, a frame split in two writes, a 16 MiB frame and its neighbour in one write,
# a character split across writes, a 1 MiB chunk.
RUNTIME = textwrap.dedent(
    r"""
    import json, os, sys, time

    def out(data):
        os.write(1, data)
        time.sleep(0.02)

    def frame(message):
        return json.dumps(message, ensure_ascii=False).encode()

    def chunk(text, kind="agent_message_chunk"):
        update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
        return frame({"jsonrpc": "2.0", "method": "session/update",
                      "params": {"sessionId": "s-1", "update": update}})

    stdin = sys.stdin.buffer
    request = json.loads(stdin.readline())
    out(b"this is not JSON\n\n\r\n")
    reply = frame({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1}})
    out(reply[:7])
    out(reply[7:] + b"\r\n")
    request = json.loads(stdin.readline())
    reply = frame({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s-1"}})
    out(chunk("z" * (16 << 20), "agent_thought_chunk") + b"\n" + reply + b"\n")
    request = json.loads(stdin.readline())
    data = chunk("h\u00e9llo \u2713 \U0001f600 ") + b"\n"
    cut = data.index("\U0001f600".encode()) + 2
    out(data[:cut])
    out(data[cut:])
    out(chunk("y" * (1 << 20)) + b"\n")
    reply = frame({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": "end_turn"}})
    out(reply + b"\n")
    while stdin.read(65536):
        pass
    """
)


class ProviderReadsTheRuntimeWhole(unittest.IsolatedAsyncioTestCase):
    async def test_awkward_framing_still_makes_the_answer(self) -> None:
        logged: list[str] = []
        with tempfile.TemporaryDirectory() as cwd:
            provider = create_acp_provider(
                runtime={"command": sys.executable, "args": ["-c", RUNTIME], "env": {}, "cwd": cwd},
                config={"disposeEofGraceMs": 2000, "disposeGraceMs": 500},
                log=logged.append,
            )
            run = await provider.start(prompt="Go.", signal=AbortSignal())
            result = await asyncio.wait_for(run.result, 30)
            await run.dispose()
        self.assertEqual(result.stop_reason, "completed", logged)
        self.assertIsNone(result.diagnostic)
        self.assertEqual(
            result.output, [{"type": "text", "text": "h\u00e9llo \u2713 \U0001f600 " + "y" * MIB}]
        )
        self.assertIn("ACP child wrote a non-JSON-RPC line: this is not JSON", logged)
        self.assertTrue(
            any(line.startswith("ACP child settled (exit code 0") for line in logged), logged
        )

    async def test_a_frame_over_the_limit_loses_the_wire_and_stdout_is_still_drained(self) -> None:
        runtime = textwrap.dedent(
            r"""
            import json, os, sys
            stdin = sys.stdin.buffer
            for result in ({"protocolVersion": 1}, {"sessionId": "s-1"}):
                request = json.loads(stdin.readline())
                reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
                os.write(1, json.dumps(reply).encode() + b"\n")
            stdin.readline()
            big = b'{"jsonrpc":"2.0","method":"session/update","params":"' + b"x" * (65 << 20)
            os.write(1, big + b'"}\n')
            while stdin.read(65536):
                pass
            """
        )
        logged: list[str] = []
        with tempfile.TemporaryDirectory() as cwd:
            provider = create_acp_provider(
                runtime={"command": sys.executable, "args": ["-c", runtime], "env": {}, "cwd": cwd},
                config={"disposeEofGraceMs": 2000, "disposeGraceMs": 300},
                log=logged.append,
            )
            run = await provider.start(prompt="Go.", signal=AbortSignal())
            result = await asyncio.wait_for(run.result, 30)
            await run.dispose()
        self.assertEqual(result.stop_reason, "error")
        self.assertEqual(
            result.diagnostic,
            "Subagent failure (provider: ACP; stage: prompt; category: transport)",
        )
        size = len(b'{"jsonrpc":"2.0","method":"session/update","params":""}') + (65 << 20)
        self.assertIn(
            f"session/prompt failed: a frame of {size} bytes, over the host's limit", logged
        )
        self.assertTrue(
            any(line.startswith("ACP child settled (exit code 0") for line in logged), logged
        )


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    unittest.main()
