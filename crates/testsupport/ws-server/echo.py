"""A websockets (asyncio) echo server for belier's WebSocket tests: echoes each message on
any path, prints "listening PORT" once it listens on 127.0.0.1, counts on its own side and
prints "counts Sockets=N In=N Out=N" when its standard input closes, then exits."""

import asyncio
import sys

from websockets.asyncio.server import serve

counts = {"Sockets": 0, "In": 0, "Out": 0}


async def echo(socket):
    counts["Sockets"] += 1
    async for message in socket:
        counts["In"] += 1
        await socket.send(message)
        counts["Out"] += 1


async def main():
    async with serve(echo, "127.0.0.1", 0, compression=None, max_queue=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"listening {port}", flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        print("counts " + " ".join(f"{k}={v}" for k, v in counts.items()), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
