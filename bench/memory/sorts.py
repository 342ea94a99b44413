"""Concurrent large sorts against one flightd: peak RSS and wall time.

Starts flightd (the binary given) on a fresh data directory, ingests a
table of ROWS rows (k BIGINT, s a ~30-byte string) in 100k-row chunks with
adbc_ingest, restarts it (so that the peak is the sorts', not the
ingest's), then runs CLIENTS concurrent ADBC clients each reading
`SELECT k, s FROM big ORDER BY s DESC`, checking every answer's count and
order. Prints flightd's peak RSS (VmHWM) during the sorts and the wall
time. Extra arguments after the binary go to flightd.

    .venv/bin/python bench/memory/sorts.py ./flightd -memory-limit 2GiB
"""

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.compute as pc

ROWS = int(os.environ.get("ROWS", 4_000_000))
CLIENTS = int(os.environ.get("CLIENTS", 12))
CHUNK = 100_000


def start(binary, data, flags):
    p = subprocess.Popen([binary, "-addr", "127.0.0.1:0", "-data", data, *flags],
                         stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"serving Flight SQL on grpc://(\S+?),?\s", line + " ")
        if m:
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, "grpc://" + m.group(1)
    raise RuntimeError("flightd did not start")


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def chunk(lo, hi):
    k = pa.array(range(lo, hi), pa.int64())
    s = pa.array([f"{(i * 7919) % 1000003:07d}-{i:08d}-padding-xxxx" for i in range(lo, hi)])
    return pa.table({"k": k, "s": s})


def ingest(uri):
    with flightsql.connect(uri) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE big (k BIGINT, s STRING)")
        for lo in range(0, ROWS, CHUNK):
            cur.adbc_ingest("big", chunk(lo, min(lo + CHUNK, ROWS)), mode="append")
        conn.commit()


def sort_client(uri):
    with flightsql.connect(uri) as conn, conn.cursor() as cur:
        cur.execute("SELECT k, s FROM big ORDER BY s DESC")
        t = cur.fetch_arrow_table()
    s = t.column("s").combine_chunks()
    if t.num_rows != ROWS or pc.sum(t.column("k")).as_py() != ROWS * (ROWS - 1) // 2:
        return f"wrong answer: {t.num_rows} rows"
    if t.num_rows > 1 and not pc.all(pc.greater(s[:-1], s[1:])).as_py():
        return "not in descending order"
    return None


def main():
    binary, flags = sys.argv[1], sys.argv[2:]
    data = tempfile.mkdtemp(prefix="flightd-memory-")
    try:
        p, uri = start(binary, data, flags)
        ingest(uri)
        p.terminate()
        p.wait()
        p, uri = start(binary, data, flags)
        try:
            t0 = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(CLIENTS) as ex:
                futs = [ex.submit(sort_client, uri) for _ in range(CLIENTS)]
                errors = [f.exception() or f.result() for f in futs]
            wall = time.monotonic() - t0
            hwm = status(p.pid, "VmHWM")
        finally:
            p.terminate()
            p.wait()
        bad = [str(e) for e in errors if e]
        print(f"flags {' '.join(flags)}: {CLIENTS} sorts of {ROWS} rows in {wall:.1f} s, "
              f"peak RSS {hwm / 2**30:.2f} GiB, {len(bad)} failed {bad[:3]}; load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
