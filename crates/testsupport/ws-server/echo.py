"""A websockets (asyncio) echo server for belier's WebSocket tests: echoes each message on
any path, prints "listening PORT" once it listens on 127.0.0.1, counts on its own side and
prints "counts Sockets=N In=N Out=N Deflate=N" when its standard input closes, then exits.
With --deflate it agrees to permessage-deflate as websockets does by default (12-bit windows
both ways when the client offers client_max_window_bits, context kept), and counts the
sockets that agreed in Deflate."""

import asyncio
import sys

from websockets.asyncio.server import serve

counts = {"Sockets": 0, "In": 0, "Out": 0, "Deflate": 0}


async def echo(socket):
    counts["Sockets"] += 1
    if any(e.name == "permessage-deflate" for e in socket.protocol.extensions):
        counts["Deflate"] += 1
    async for message in socket:
        counts["In"] += 1
        await socket.send(message)
        counts["Out"] += 1


async def main():
    compression = "deflate" if "--deflate" in sys.argv[1:] else None
    async with serve(echo, "127.0.0.1", 0, compression=compression, max_queue=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        print("counts " + " ".join(f"{k}={v}" for k, v in counts.items()), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
