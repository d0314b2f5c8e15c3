"""Open N TCP connections to an echo server at once with asyncio, echo
SIZE bytes on each, close, and print one JSON line: how many succeeded
and failed, the seconds the burst took and the client's CPU seconds, the
median, 99th percentile and longest time of one connection (connect,
echo, close), and the growth of this network
namespace's TCP retransmission counters (/proc/net/snmp TcpRetransSegs,
/proc/net/netstat TcpExt TCPSynRetrans) over the burst.

usage: python3 burst.py HOST PORT [N [SIZE [TIMEOUT]]]
"""

import asyncio
import json
import os
import resource
import sys
import time


def counters():
    out = {}
    for path in ("/proc/net/snmp", "/proc/net/netstat"):
        with open(path) as f:
            lines = f.read().splitlines()
        for names, values in zip(lines[0::2], lines[1::2]):
            prefix, names = names.split(":", 1)
            _, values = values.split(":", 1)
            for k, v in zip(names.split(), values.split()):
                out[prefix + k] = int(v)
    return out


async def one(host, port, payload, timeout):
    t0 = time.monotonic()

    async def run():
        r, w = await asyncio.open_connection(host, port)
        try:
            w.write(payload)
            got = await r.readexactly(len(payload))
            if got != payload:
                raise ValueError("echo differs")
        finally:
            w.close()
            await w.wait_closed()
    await asyncio.wait_for(run(), timeout)
    return time.monotonic() - t0


async def burst(host, port, n, size, timeout):
    payload = os.urandom(size)
    t0 = time.monotonic()
    results = await asyncio.gather(*(one(host, port, payload, timeout) for _ in range(n)), return_exceptions=True)
    seconds = time.monotonic() - t0
    errors = {}
    times = []
    for r in results:
        if isinstance(r, BaseException):
            k = type(r).__name__ + ": " + str(r)
            errors[k] = errors.get(k, 0) + 1
        else:
            times.append(r)
    return seconds, errors, sorted(times)


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 30.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
    before = counters()
    cpu0 = time.process_time()
    seconds, errors, times = asyncio.run(burst(host, port, n, size, timeout))
    cpu = time.process_time() - cpu0
    after = counters()
    failed = sum(errors.values())
    print(json.dumps({
        "conns": n, "ok": n - failed, "failed": failed, "errors": errors, "seconds": seconds, "cpu_seconds": cpu,
        "conn_p50": times[len(times) // 2] if times else 0, "conn_p99": times[len(times) * 99 // 100] if times else 0,
        "conn_max": times[-1] if times else 0,
        "retrans_segs": after["TcpRetransSegs"] - before["TcpRetransSegs"],
        "syn_retrans": after.get("TcpExtTCPSynRetrans", 0) - before.get("TcpExtTCPSynRetrans", 0),
    }))


if __name__ == "__main__":
    main()
