"""A sink for the hostile bench's oversized bodies: reads a request's head and up to 128 KiB of its
body, answers 413 and closes, as the tracker does, and nothing else. Run it and point
HOSTILE_BIG_BASE at it to see what the attack costs the machine without the tracker:

    python3 bench/ab/sink413.py 18999 &
    HOSTILE_ATTACKS=big HOSTILE_BIG_BASE=http://127.0.0.1:18999 target/release/bench --phases hostile
"""
import asyncio
import sys

ANSWER = b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


async def serve(reader, writer):
    try:
        await reader.readuntil(b"\r\n\r\n")
        await reader.read(128 * 1024)
        writer.write(ANSWER)
        await writer.drain()
    except Exception:
        pass
    writer.close()


async def main(port):
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 18999))
