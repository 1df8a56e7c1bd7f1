"""A stub inference server for the probe tests: HTTP/1.1 with keep-alive on 127.0.0.1 (a
random free port), in a thread with its own asyncio loop. Each request gets the next delay
of a deterministic sequence (seconds), then a small JSON body. The server records the time
it actually held each request (from the end of the request to the response written), which
is the truth the probe's CV is compared with.

Behaviours: `delays` (cycled), `status` (callable request index -> status code), `mode`
"normal" | "slowloris" (headers, then one body byte every 0.2 s) | "reset" (close without
answering); `payload` (callable (index, path) -> bytes; default: the body of the API the
path belongs to, `answer`); `headers` (callable index -> extra header lines, e.g. a
redirect's Location).
"""
from __future__ import annotations

import asyncio
import json
import math
import random
import statistics
import threading
import time


def lognormal_delays(mean: float, cv: float, n: int = 4000, seed: int = 15) -> list[float]:
    """`n` delays (s) from a lognormal with this mean and CV (seeded)."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    rng = random.Random(seed)
    return [rng.lognormvariate(mu, sigma) for _ in range(n)]


def cv(values: list[float]) -> float:
    """Population stddev / mean."""
    return statistics.pstdev(values) / statistics.fmean(values)


def answer(i: int, path: str) -> bytes:
    """A minimal response of the API `path` belongs to (OpenAI completions and chat, KServe
    v1 and v2; anything else: a completions body)."""
    if path.endswith("/chat/completions"):
        doc = {"id": i, "choices": [{"message": {"role": "assistant", "content": "ok"}}]}
    elif ":predict" in path:
        doc = {"predictions": [[0.1]]}
    elif path.endswith("/infer"):
        doc = {"outputs": [{"name": "o", "shape": [1], "datatype": "FP32", "data": [0.1]}]}
    else:
        doc = {"id": i, "choices": [{"text": "ok"}]}
    return json.dumps(doc).encode()


class Stub:
    def __init__(self, delays=(0.0,), status=None, mode="normal", payload=None, headers=None):
        self.delays = list(delays)
        self.status = status or (lambda i: 200)
        self.mode = mode
        self.payload = payload or answer
        self.headers = headers or (lambda i: "")
        self.held: list[float] = []       # seconds each request was held, arrival order
        self.paths: list[str] = []
        self.bodies: list[bytes] = []
        self._count = 0
        self._ready = threading.Event()
        self.port = 0

    async def _handle(self, reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = 0
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    if k.strip().lower() == "content-length":
                        length = int(v.strip())
                body = await reader.readexactly(length) if length else b""
                start = time.perf_counter()
                i = self._count
                self._count += 1
                self.paths.append(lines[0].split(" ")[1])
                self.bodies.append(body)
                if self.mode == "reset":
                    writer.close()
                    return
                await asyncio.sleep(self.delays[i % len(self.delays)])
                code = self.status(i)
                payload = self.payload(i, self.paths[-1])
                if self.mode == "slowloris":
                    writer.write(f"HTTP/1.1 200 OK\r\nContent-Length: {len(payload)}\r\n"
                                 f"Content-Type: application/json\r\n\r\n".encode())
                    for b in payload:
                        writer.write(bytes([b]))
                        await writer.drain()
                        await asyncio.sleep(0.2)
                    continue
                writer.write(f"HTTP/1.1 {code} X\r\nContent-Length: {len(payload)}\r\n"
                             f"{self.headers(i)}"
                             f"Content-Type: application/json\r\n\r\n".encode() + payload)
                await writer.drain()
                self.held.append(time.perf_counter() - start)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _serve(self):
        loop = asyncio.new_event_loop()
        self.loop = loop

        async def main():
            self.stop = asyncio.Event()
            server = await asyncio.start_server(self._track, "127.0.0.1", 0, backlog=512)
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self.stop.wait()
            server.close()
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks = set()
        loop.run_until_complete(main())
        loop.close()

    async def _track(self, reader, writer):
        task = asyncio.current_task()
        self.tasks.add(task)
        try:
            await self._handle(reader, writer)
        except asyncio.CancelledError:
            writer.close()
        finally:
            self.tasks.discard(task)

    def __enter__(self):
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)

    def reset(self) -> None:
        """Start the delay sequence again (two tools then see the same delays)."""
        self._count = 0
        self.held, self.paths, self.bodies = [], [], []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
