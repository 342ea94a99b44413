"""Lookups through pyarrow.flight: DoExchange of key batches and the
flightd/lookup1: DoGet ticket. Run through `go test ./flightsql -run Interop`.
"""
import json
import os
import random

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pyarrow.flight as flight
import pytest

URI = os.environ["FLIGHTD_URI"]


@pytest.fixture
def conn():
    with flight_sql.connect(URI, autocommit=True) as c:
        yield c


def test_do_exchange(conn):
    seed = random.randrange(1 << 30)
    print("seed", seed)
    rnd = random.Random(seed)
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_lookup_dim (id BIGINT, region STRING, name STRING, "
                "PRIMARY KEY (id, region) NOT ENFORCED) WITH ('bucket' = '2')")
    rows = {(i, r): f"n{i}{r}" for i in range(50) for r in ("eu", "us") if rnd.random() < 0.7}
    cur.adbc_ingest("py_lookup_dim", pa.table({
        "id": pa.array([k[0] for k in rows], pa.int64()),
        "region": [k[1] for k in rows],
        "name": list(rows.values())}), mode="append")
    client = flight.connect(URI)
    desc = flight.FlightDescriptor.for_command(json.dumps({"table": "py_lookup_dim", "columns": ["name"]}))
    writer, reader = client.do_exchange(desc)
    schema = pa.schema([("id", pa.int32()), ("region", pa.string())])  # int32: converted by the server
    batches = []
    for _ in range(20):
        keys = [(rnd.randrange(60), rnd.choice(["eu", "us", "xx"])) for _ in range(rnd.randrange(1, 200))]
        keys.append((None, "eu"))
        keys.append(keys[0])
        batches.append(keys)
    writer.begin(schema)
    for keys in batches[:10]:  # several batches in flight before reading
        writer.write_batch(pa.record_batch([pa.array([k[0] for k in keys], pa.int32()),
                                            pa.array([k[1] for k in keys])], schema=schema))
    got = []
    for keys in batches[10:]:
        writer.write_batch(pa.record_batch([pa.array([k[0] for k in keys], pa.int32()),
                                            pa.array([k[1] for k in keys])], schema=schema))
        got.append(reader.read_chunk())
    writer.done_writing()
    while True:
        try:
            got.append(reader.read_chunk())
        except StopIteration:
            break
    writer.close()
    assert len(got) == len(batches)
    for keys, chunk in zip(batches, got):
        assert json.loads(chunk.app_metadata.to_pybytes())["snapshot"] >= 1
        b = chunk.data
        assert b.schema.names == ["name", "found"]
        want_names = [rows.get(k) for k in keys]
        assert b.column("name").to_pylist() == want_names
        assert b.column("found").to_pylist() == [n is not None for n in want_names]


def test_do_get_ticket_and_errors(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_lookup_kv (k STRING, v DOUBLE, PRIMARY KEY (k) NOT ENFORCED)")
    cur.execute("INSERT INTO py_lookup_kv VALUES ('a', 1.5), ('b', 2.5)")
    client = flight.connect(URI)
    ticket = b"flightd/lookup1:" + json.dumps({"table": "py_lookup_kv", "keys": [["b"], ["zz"], ["a"]]}).encode()
    t = client.do_get(flight.Ticket(ticket)).read_all()
    assert t.column("v").to_pylist() == [2.5, None, 1.5]
    assert t.column("found").to_pylist() == [True, False, True]
    with pytest.raises(pa.ArrowKeyError, match="table default.nope: table not found"):  # NOT_FOUND
        client.do_get(flight.Ticket(b"flightd/lookup1:" + json.dumps({"table": "nope", "keys": [["a"]]}).encode())).read_all()
    desc = flight.FlightDescriptor.for_command(json.dumps({"table": "py_lookup_kv"}))
    writer, reader = client.do_exchange(desc)
    writer.begin(pa.schema([("k", pa.string()), ("extra", pa.int64())]))
    with pytest.raises(pa.ArrowInvalid, match="the keys have 2 columns, the primary key has 1"):  # INVALID_ARGUMENT
        writer.write_batch(pa.record_batch([pa.array(["a"]), pa.array([1])], names=["k", "extra"]))
        writer.done_writing()
        reader.read_chunk()
    # The connection keeps working after the refused exchange.
    t = client.do_get(flight.Ticket(ticket)).read_all()
    assert t.column("found").to_pylist() == [True, False, True]
