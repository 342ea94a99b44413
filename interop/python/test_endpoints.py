"""A result split over several endpoints (session option flightd.max_endpoints),
read on parallel threads through ADBC partitions and through pyarrow.flight,
gives the rows of the one-endpoint result. Run through
`go test ./flightsql -run Interop` (its server splits results of any size).
"""
import os
import random
from concurrent.futures import ThreadPoolExecutor

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pyarrow.flight as flight

URI = os.environ["FLIGHTD_URI"]
COOKIES = {"adbc.flight.sql.rpc.with_cookie_middleware": "true"}


def rows(table):
    return sorted(repr(tuple(r.values())) for r in table.to_pylist())


def test_parallel_endpoints():
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rnd = random.Random(seed)
    with flight_sql.connect(URI, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE py_split (a BIGINT, b INT, s STRING) WITH ('write-only' = 'true')")
        for _ in range(rnd.randrange(4, 12)):
            n = rnd.randrange(1, 500)
            cur.adbc_ingest("py_split", pa.table({
                "a": pa.array([rnd.randrange(10**6) for _ in range(n)], pa.int64()),
                "b": pa.array([rnd.choice([None, 1, 2, 3]) for _ in range(n)], pa.int32()),
                "s": [f"s{rnd.randrange(50)}" for _ in range(n)]}), mode="append")
        queries = ["SELECT * FROM py_split",
                   f"SELECT a, upper(s) FROM py_split WHERE b = {rnd.randrange(1, 4)} OR a < {rnd.randrange(10**6)}"]
        wants = []
        for q in queries:
            cur.execute(q)
            wants.append(rows(cur.fetch_arrow_table()))

    endpoints = rnd.randrange(2, 6)
    with flight_sql.connect(URI, autocommit=True, db_kwargs=COOKIES) as conn:
        conn.adbc_connection.set_options(**{"adbc.flight.sql.session.option.flightd.max_endpoints": str(endpoints)})
        cur = conn.cursor()
        for q, want in zip(queries, wants):
            partitions, schema = cur.adbc_execute_partitions(q)
            if not 1 < len(partitions) <= endpoints:
                cur.execute("EXPLAIN " + q)
                raise AssertionError((q, len(partitions), [len(flight.FlightInfo.deserialize(p).endpoints) for p in partitions], cur.fetchall()))

            def read_adbc(p):
                with flight_sql.connect(URI, autocommit=True) as reader:
                    c = reader.cursor()
                    c.adbc_read_partition(p)
                    return c.fetch_arrow_table()

            with ThreadPoolExecutor(len(partitions)) as pool:
                tables = list(pool.map(read_adbc, partitions))
            assert rows(pa.concat_tables(tables)) == want, q

            # The partitions are serialized FlightInfos: pyarrow.flight reads
            # their endpoints' tickets too, each thread with its own client.
            def read_flight(p):
                info = flight.FlightInfo.deserialize(p)
                client = flight.connect(URI)
                try:
                    return pa.concat_tables([client.do_get(ep.ticket).read_all() for ep in info.endpoints])
                finally:
                    client.close()

            with ThreadPoolExecutor(len(partitions)) as pool:
                tables = list(pool.map(read_flight, reversed(partitions)))
            assert rows(pa.concat_tables(tables)) == want, q
