"""pyarrow.flight and adbc_driver_flightsql against a running flightd.

Run through `go test ./flightsql -run Interop`, which starts flightd and sets
FLIGHTD_URI.
"""
import json
import os
import time

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.flight as flight
import pytest

URI = os.environ["FLIGHTD_URI"]


@pytest.fixture
def conn():
    with flight_sql.connect(URI, autocommit=True) as c:
        yield c


def test_ddl_ingest_query(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_orders (id BIGINT NOT NULL, customer VARCHAR, amount DOUBLE, "
                "PRIMARY KEY (id) NOT ENFORCED)")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "customer": ["ann", "bob", None],
                     "amount": [10.5, 3.0, 7.25]})
    assert cur.adbc_ingest("py_orders", data, mode="append") == 3
    cur.execute("SELECT id, customer, amount FROM py_orders WHERE amount > 5 ORDER BY id")
    got = cur.fetch_arrow_table()
    assert got.column("id").to_pylist() == [1, 3]
    assert got.column("customer").to_pylist() == ["ann", None]
    cur.close()


def test_parameters(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_kv (k BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (k) NOT ENFORCED)")
    cur.executemany("INSERT INTO py_kv VALUES (?, ?)", [(1, "one"), (2, "two"), (3, "three")])
    cur.execute("SELECT v FROM py_kv WHERE k = ?", parameters=(2,))
    assert cur.fetchall() == [("two",)]
    cur.close()


def test_ingest_type_mismatch_names_column(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_typed (a BIGINT)")
    with pytest.raises(adbc_driver_manager.Error, match='"a"'):
        cur.adbc_ingest("py_typed", pa.table({"a": ["not a number"]}), mode="append")
    cur.execute("SELECT a FROM py_typed")
    assert cur.fetchall() == []
    cur.close()


def test_null_into_not_null_is_23502(conn):
    # A NULL for a NOT NULL column, a primary key's among them, is
    # SQLSTATE 23502 (not_null_violation) naming the column, through
    # INSERT and bulk ingest alike, and writes nothing.
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_nn (id BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (id) NOT ENFORCED)")
    with pytest.raises(adbc_driver_manager.Error, match=r'primary key column "id".*SQLSTATE 23502'):
        cur.execute("INSERT INTO py_nn VALUES (NULL, 'x')")
    with pytest.raises(adbc_driver_manager.Error, match=r'column "id".*SQLSTATE 23502'):
        cur.adbc_ingest("py_nn", pa.table({"id": pa.array([1, None], pa.int64()), "v": ["a", "b"]}), mode="append")
    cur.execute("SELECT count(*) FROM py_nn")
    assert cur.fetchall() == [(0,)]
    cur.close()


def test_syntax_error_has_position(conn):
    cur = conn.cursor()
    with pytest.raises(adbc_driver_manager.ProgrammingError, match=r"line 1:\d+"):
        cur.execute("SELECT FROM WHERE")
    cur.close()


def test_metadata(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_meta (id INT NOT NULL, name VARCHAR, PRIMARY KEY (id) NOT ENFORCED)")
    cur.close()
    objs = conn.adbc_get_objects(depth="all").read_all().to_pylist()
    assert [c["catalog_name"] for c in objs] == ["flightd"]
    tables = {t["table_name"]: t for s in objs[0]["catalog_db_schemas"] for t in (s["db_schema_tables"] or [])}
    assert [c["column_name"] for c in tables["py_meta"]["table_columns"]] == ["id", "name"]
    schema = conn.adbc_get_table_schema("py_meta")
    assert schema.field("id").type == pa.int32()
    assert not schema.field("id").nullable


def test_pyarrow_flight_foreign_ticket():
    """A raw pyarrow.flight DoGet with a ticket flightd did not issue is
    refused as invalid, with a message that says so."""
    client = flight.FlightClient(URI)
    with pytest.raises(pa.ArrowInvalid, match="not a Flight SQL ticket issued by flightd"):
        client.do_get(flight.Ticket(b"not-a-flightd-ticket")).read_all()
    client.close()


def test_pyarrow_flight_list_flights(conn):
    """Plain Flight: ListFlights lists the tables; each FlightInfo's ticket
    reads the whole table, and a pattern narrows the list."""
    cur = conn.cursor()
    cur.execute("CREATE DATABASE py_list")
    cur.execute("CREATE TABLE py_list.items (id BIGINT, name VARCHAR)")
    cur.execute("INSERT INTO py_list.items VALUES (1, 'a'), (2, 'b')")
    cur.close()
    client = flight.FlightClient(URI)
    infos = list(client.list_flights(b"py_list.*"))
    assert [i.descriptor.path for i in infos] == [[b"py_list", b"items"]]
    assert infos[0].schema.names == ["id", "name"]
    got = client.do_get(infos[0].endpoints[0].ticket).read_all()
    assert sorted(got.column("id").to_pylist()) == [1, 2]
    assert any(i.descriptor.path == [b"py_list", b"items"] for i in client.list_flights())
    with pytest.raises(pa.ArrowInvalid, match="not a pattern"):
        list(client.list_flights(b"[bad"))
    client.close()


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_compressed_results(codec):
    """Results asked for with IPC body compression read back the same."""
    header = "adbc.flight.sql.rpc.call_header.x-flightd-compression"
    with flight_sql.connect(URI, db_kwargs={header: codec}, autocommit=True) as c:
        cur = c.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS py_codec_" + codec + " (a BIGINT)")
        cur.adbc_ingest("py_codec_" + codec, pa.table({"a": pa.array(range(10000), pa.int64())}), mode="append")
        cur.execute("SELECT a FROM py_codec_" + codec + " ORDER BY a")
        assert cur.fetch_arrow_table().column("a").to_pylist() == list(range(10000))
        cur.close()


def test_temporary_ingest(conn):
    cur = conn.cursor()
    cur.adbc_ingest("py_tmp", pa.table({"a": pa.array([1, 2], pa.int64())}), mode="create", temporary=True)
    cur.execute("SELECT a FROM temp.py_tmp ORDER BY a")
    assert cur.fetchall() == [(1,), (2,)]
    cur.close()


def read_changes(reader, until):
    """Reads a change stream until until(rows) is true; returns the rows
    [(snapshot, row kind, k, v)] and the progress markers' snapshots."""
    rows, markers = [], []
    while not until(rows):
        chunk = reader.read_chunk()
        meta = json.loads(chunk.app_metadata.to_pybytes())
        if chunk.data.num_rows == 0:
            if meta.get("image") in ("start", "end"):
                continue  # around the full read of a -full start
            assert meta["caught_up"]
            markers.append(meta["snapshot"])
            continue
        for kind, k, v in zip(*(chunk.data.column(i).to_pylist() for i in range(3))):
            rows.append((meta["snapshot"], kind, k, v))
    return rows, markers


def test_change_stream_ticket(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_changes (k BIGINT NOT NULL, v VARCHAR, PRIMARY KEY (k) NOT ENFORCED)")
    cur.execute("INSERT INTO py_changes VALUES (1, 'a'), (2, 'b')")
    client = flight.connect(URI)
    ticket = b"flightd/changes1:" + json.dumps(
        {"table": "py_changes", "mode": "latest-full", "heartbeat_millis": 100}).encode()
    reader = client.do_get(flight.Ticket(ticket))
    assert reader.schema.names == ["_row_kind", "k", "v"]
    rows, _ = read_changes(reader, lambda rows: len(rows) == 2)
    assert sorted(r[1:] for r in rows) == [("+I", 1, "a"), ("+I", 2, "b")]
    cur.execute("UPDATE py_changes SET v = 'b2' WHERE k = 2")
    cur.execute("DELETE FROM py_changes WHERE k = 1")
    rows, markers = read_changes(reader, lambda rows: any(r[1] == "-D" for r in rows))
    # Without a changelog producer an update arrives as the upsert written
    # (UPDATE writes +U), with no before-image.
    assert ("+U", 2, "b2") in [r[1:] for r in rows]
    assert "-U" not in [r[1] for r in rows]
    assert ("-D", 1) in [(r[1], r[2]) for r in rows]
    # Batches of one snapshot are contiguous and snapshots only grow.
    snaps = [r[0] for r in rows]
    assert snaps == sorted(snaps)
    reader.cancel()
    client.close()
    cur.close()


def test_use_applies_to_later_statements():
    # DB-API prepares every statement: USE must switch the session's
    # database on the prepared path too. The session lives in a cookie.
    with flight_sql.connect(URI, autocommit=True, db_kwargs={
            "adbc.flight.sql.rpc.with_cookie_middleware": "true"}) as conn:
        use_database(conn)


def use_database(conn):
    cur = conn.cursor()
    cur.execute("CREATE DATABASE IF NOT EXISTS py_use")
    cur.execute("USE py_use")
    cur.execute("CREATE TABLE py_used (a BIGINT)")
    cur.execute("INSERT INTO py_used VALUES (1)")
    cur.execute("SELECT a FROM py_use.py_used")
    assert cur.fetchall() == [(1,)]
    cur.execute("SHOW TABLES FROM default")
    assert ("py_used",) not in cur.fetchall()
    cur.execute("USE `default`")
    cur.close()


def flight_sql_query(client, query):
    """GetFlightInfo for a Flight SQL CommandStatementQuery, encoded by
    hand (a google.protobuf.Any of field 1, the query)."""
    def field(num, data):
        n, head = len(data), bytes([num << 3 | 2])
        while True:
            if n < 0x80:
                return head + bytes([n]) + data
            head, n = head + bytes([n & 0x7F | 0x80]), n >> 7
    url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
    cmd = field(1, url) + field(2, field(1, query.encode()))
    return client.get_flight_info(flight.FlightDescriptor.for_command(cmd))


def test_streaming_aggregate(conn):
    """A GROUP BY over a change stream, read with pyarrow.flight: updates
    of a group come as -U/+U, labelled with their snapshot."""
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_agg (k BIGINT NOT NULL, g VARCHAR, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
    cur.execute("INSERT INTO py_agg VALUES (1, 'a', 10), (2, 'a', 5), (3, 'b', 1)")
    cur.execute("UPDATE py_agg SET n = 20 WHERE k = 1")
    client = flight.connect(URI)
    info = flight_sql_query(client, "SELECT g, count(*), sum(n) FROM py_agg /*+ OPTIONS("
                            "'scan.mode'='from-snapshot-full', 'scan.snapshot-id'='1', "
                            "'scan.bounded.snapshot-id'='2') */ GROUP BY g")
    reader = client.do_get(info.endpoints[0].ticket)
    assert reader.schema.names[0] == "_row_kind"
    rows = []
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            break
        meta = json.loads(chunk.app_metadata.to_pybytes())
        if chunk.data.num_rows == 0:
            continue
        for r in zip(*(c.to_pylist() for c in chunk.data.columns)):
            rows.append((meta["snapshot"],) + r)
    assert sorted(rows) == [
        (1, "+I", "a", 2, 15), (1, "+I", "b", 1, 1),
        (2, "+U", "a", 2, 25), (2, "-U", "a", 2, 15),
    ]
    client.close()
    cur.close()


def test_result_column_metadata(conn):
    """Results carry the Flight SQL column metadata (type name, precision,
    scale) that JDBC and ODBC layers read."""
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_money (id INT NOT NULL, amount DECIMAL(10,2))")
    cur.execute("INSERT INTO py_money VALUES (1, 12.34)")
    cur.execute("SELECT id, amount FROM py_money")
    field = cur.fetch_arrow_table().schema.field("amount")
    md = {k.decode(): v.decode() for k, v in field.metadata.items()}
    assert md["ARROW:FLIGHT:SQL:TYPE_NAME"] == "DECIMAL(10, 2)"
    assert (md["ARROW:FLIGHT:SQL:PRECISION"], md["ARROW:FLIGHT:SQL:SCALE"]) == ("10", "2")
    cur.close()
    schema = conn.adbc_get_table_schema("py_money")
    md = {k.decode(): v.decode() for k, v in schema.field("amount").metadata.items()}
    assert (md["XDBC_COLUMN_SIZE"], md["XDBC_DECIMAL_DIGITS"], md["XDBC_NULLABLE"]) == ("10", "2", "1")
    objs = conn.adbc_get_objects(depth="columns", table_name_filter="py_money").read_all().to_pylist()
    cols = {c["column_name"]: c for s in objs[0]["catalog_db_schemas"]
            for t in (s["db_schema_tables"] or []) for c in t["table_columns"]}
    assert cols["amount"]["xdbc_type_name"] == "DECIMAL(10, 2)"


def test_large_batch_with_max_msg_size():
    """The driver refuses to send a message over 16 MiB unless its limit
    is raised (README); flightd takes up to 256 MiB."""
    t = pa.table({"a": pa.array(range(2_200_000), pa.int64())})  # one 17.6 MB batch
    with flight_sql.connect(URI, autocommit=True) as c, c.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error, match="larger than max"):
            cur.adbc_ingest("py_big_batch", t, mode="replace")
    opt = {"adbc.flight.sql.client_option.with_max_msg_size": str(64 << 20)}
    with flight_sql.connect(URI, autocommit=True, db_kwargs=opt) as c, c.cursor() as cur:
        assert cur.adbc_ingest("py_big_batch", t, mode="replace") == 2_200_000


def test_materialized_table_statements(conn):
    """Every materialized-table statement through the DB-API: a continuous
    table and a full one, switched, suspended, resumed, refreshed, shown,
    described and dropped."""
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_src (k BIGINT NOT NULL, g INT, PRIMARY KEY (k) NOT ENFORCED)")
    cur.execute("INSERT INTO py_src VALUES (1, 1), (2, 1), (3, 2)")
    cur.execute("CREATE MATERIALIZED TABLE py_live FRESHNESS = INTERVAL '1' SECOND "
                "AS SELECT g, count(*) AS n FROM py_src GROUP BY g")
    cur.execute("CREATE MATERIALIZED TABLE py_full FRESHNESS = INTERVAL '1' HOUR "
                "AS SELECT g, count(*) AS n FROM py_src GROUP BY g")

    def describe(name):
        cur.execute(f"DESCRIBE EXTENDED {name}")
        return {r[0]: r[1] for r in cur.fetchall()}

    assert describe("py_live")["refresh_mode"] == "CONTINUOUS"
    assert describe("py_full")["refresh_mode"] == "FULL"
    cur.execute("INSERT INTO py_src VALUES (4, 2)")
    cur.execute("ALTER MATERIALIZED TABLE py_full REFRESH")
    cur.execute("SELECT g, n FROM py_full ORDER BY g")
    assert cur.fetchall() == [(1, 2), (2, 2)]
    # The continuous table catches up with the insert on its own.
    deadline = time.time() + 30
    while True:
        cur.execute("SELECT g, n FROM py_live ORDER BY g")
        if cur.fetchall() == [(1, 2), (2, 2)]:
            break
        assert time.time() < deadline, "py_live did not catch up"
        time.sleep(0.1)
    cur.execute("ALTER MATERIALIZED TABLE py_live SET FRESHNESS = INTERVAL '1' HOUR")
    assert describe("py_live")["refresh_mode"] == "FULL"
    cur.execute("ALTER MATERIALIZED TABLE py_full SUSPEND")
    assert describe("py_full")["status"] == "SUSPENDED"
    cur.execute("ALTER MATERIALIZED TABLE py_full RESUME")
    cur.execute("ALTER MATERIALIZED TABLE py_full AS SELECT g, max(k) AS top FROM py_src GROUP BY g")
    cur.execute("SELECT g, top FROM py_full ORDER BY g")
    assert cur.fetchall() == [(1, 2), (2, 4)]
    cur.execute("SHOW CREATE MATERIALIZED TABLE py_full")
    assert "max(k) AS top" in cur.fetchall()[0][0]
    cur.execute("SELECT table_name, refresh_mode FROM sys.materialized_tables "
                "WHERE table_name LIKE 'py_%' ORDER BY table_name")
    assert cur.fetchall() == [("py_full", "FULL"), ("py_live", "FULL")]
    cur.execute("SHOW MATERIALIZED TABLES")
    assert {"py_full", "py_live"} <= {r[0] for r in cur.fetchall()}
    with pytest.raises(Exception, match="materialized table"):
        cur.execute("INSERT INTO py_live VALUES (9, 9)")
    cur.execute("DROP MATERIALIZED TABLE py_live")
    cur.execute("DROP MATERIALIZED TABLE py_full")
    cur.close()


def test_data_error_message(conn):
    # The driver's Go code formats the server's message: a '%' in it
    # printed "%!(MISSING)" (issue 19).
    cur = conn.cursor()
    with pytest.raises(Exception) as e:
        cur.execute("SELECT MOD(7, 0)")
        cur.fetchall()
    msg = str(e.value)
    assert "MISSING" not in msg
    assert "line 1:8" in msg and "SQLSTATE 22012" in msg
    cur.close()


def test_materialized_table_every_statement(conn):
    """The statements of issue 13 the test above leaves out, through the
    DB-API: a column list with a watermark, IF NOT EXISTS, CREATE OR ALTER,
    a partitioned table refreshed by partition with a date formatter,
    RESUME WITH, SHOW CREATE (whose text creates the table again), DESCRIBE
    EXTENDED, the per-database freshness threshold and DROP IF EXISTS."""
    cur = conn.cursor()
    cur.execute("CREATE DATABASE py_mt WITH "
                "('materialized-table.refresh-mode.freshness-threshold' = '2 h')")
    cur.execute("CREATE TABLE py_mt.orders (id BIGINT NOT NULL, ds STRING NOT NULL, amount INT, "
                "ts TIMESTAMP(3), PRIMARY KEY (id) NOT ENFORCED)")
    cur.execute("INSERT INTO py_mt.orders VALUES (1, '2026-11-30', 10, TIMESTAMP '2026-11-30 10:00:00'), "
                "(2, '2026-12-01', 5, TIMESTAMP '2026-12-01 09:00:00')")
    cur.execute("CREATE MATERIALIZED TABLE py_mt.typed (id BIGINT NOT NULL, ts TIMESTAMP(3), "
                "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (id) NOT ENFORCED) "
                "FRESHNESS = INTERVAL '1' HOUR AS SELECT id, amount, ts FROM py_mt.orders")
    cur.execute("SHOW CREATE MATERIALIZED TABLE py_mt.typed")
    ddl = cur.fetchall()[0][0]
    assert "WATERMARK FOR ts AS (ts - INTERVAL '5' SECOND)" in ddl and "PRIMARY KEY (id)" in ddl
    # Below the database's 2 h threshold: CONTINUOUS.
    cur.execute("DESCRIBE EXTENDED py_mt.typed")
    d = {r[0]: r[1] for r in cur.fetchall()}
    assert d["refresh_mode"] == "CONTINUOUS" and d["freshness"] == "INTERVAL '1' HOUR"
    assert {"last_refresh", "data_lag", "next_run", "job", "last_error", "failures"} <= d.keys()
    cur.execute("DROP MATERIALIZED TABLE py_mt.typed")
    cur.execute(ddl)  # SHOW CREATE's text creates it again
    cur.execute("CREATE MATERIALIZED TABLE IF NOT EXISTS py_mt.typed AS SELECT 1 AS x FROM py_mt.orders")
    cur.execute("SELECT count(*) FROM py_mt.typed")
    assert cur.fetchall() == [(2,)]
    with pytest.raises(Exception, match="is declared INT, but the query produces BIGINT"):
        cur.execute("CREATE MATERIALIZED TABLE py_mt.bad (id INT) AS SELECT id FROM py_mt.orders")

    cur.execute("ALTER DATABASE py_mt SET ('materialized-table.refresh-mode.freshness-threshold' = '30 min')")
    cur.execute("CREATE MATERIALIZED TABLE py_mt.daily PARTITIONED BY (ds) "
                "WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd') "
                "FRESHNESS = INTERVAL '1' HOUR "
                "AS SELECT ds, sum(amount) AS total FROM py_mt.orders GROUP BY ds")
    cur.execute("SELECT refresh_mode FROM sys.materialized_tables "
                "WHERE database_name = 'py_mt' AND table_name = 'daily'")
    assert cur.fetchall() == [("FULL",)]
    cur.execute("INSERT INTO py_mt.orders VALUES (3, '2026-11-30', 1, NULL), (4, '2026-12-01', 2, NULL)")
    cur.execute("ALTER MATERIALIZED TABLE py_mt.daily REFRESH PARTITION (ds = '2026-11-30')")
    cur.execute("SELECT ds, total FROM py_mt.daily ORDER BY ds")
    assert cur.fetchall() == [("2026-11-30", 11), ("2026-12-01", 5)]  # only that partition
    cur.execute("ALTER MATERIALIZED TABLE py_mt.daily SUSPEND")
    cur.execute("ALTER MATERIALIZED TABLE py_mt.daily RESUME WITH ('write-buffer-size' = '4 mb')")
    cur.execute("SHOW CREATE MATERIALIZED TABLE py_mt.daily")
    ddl = cur.fetchall()[0][0]
    assert "'write-buffer-size' = '4 mb'" in ddl and "'partition.fields.ds.date-formatter' = 'yyyy-MM-dd'" in ddl
    cur.execute("CREATE OR ALTER MATERIALIZED TABLE py_mt.daily PARTITIONED BY (ds) "
                "WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd') FRESHNESS = INTERVAL '1' HOUR "
                "AS SELECT ds, count(*) AS n FROM py_mt.orders GROUP BY ds")
    cur.execute("SELECT ds, n FROM py_mt.daily ORDER BY ds")
    assert cur.fetchall() == [("2026-11-30", 2), ("2026-12-01", 2)]
    cur.execute("SHOW MATERIALIZED TABLES FROM py_mt")
    assert sorted(r[0] for r in cur.fetchall()) == ["daily", "typed"]
    cur.execute("DROP MATERIALIZED TABLE IF EXISTS py_mt.nope")
    cur.execute("DROP MATERIALIZED TABLE py_mt.daily")
    cur.execute("DROP DATABASE py_mt CASCADE")
    cur.close()


def test_default_mode_reads_own_writes(conn):
    """ADBC's DB-API connects with autocommit off, so every statement runs
    in a transaction until commit(): it must see its own inserts and
    updates (two increments of one row add 2; the cursor reuses the
    prepared UPDATE), and nobody else may before the commit. (The driver
    sends adbc_ingest without the transaction: it commits at once.)"""
    setup = conn.cursor()
    setup.execute("CREATE TABLE py_txn (k BIGINT NOT NULL, v BIGINT, PRIMARY KEY (k) NOT ENFORCED)")
    setup.execute("INSERT INTO py_txn VALUES (1, 10)")
    with flight_sql.connect(URI) as tx, tx.cursor() as cur:
        cur.execute("INSERT INTO py_txn VALUES (2, 20)")
        cur.execute("UPDATE py_txn SET v = v + 1 WHERE k = 1")
        cur.execute("UPDATE py_txn SET v = v + 1 WHERE k = 1")
        cur.execute("SELECT k, v FROM py_txn ORDER BY k")
        assert cur.fetchall() == [(1, 12), (2, 20)]
        setup.execute("SELECT k, v FROM py_txn ORDER BY k")
        assert setup.fetchall() == [(1, 10)]
        tx.commit()
    setup.execute("SELECT k, v FROM py_txn ORDER BY k")
    assert setup.fetchall() == [(1, 12), (2, 20)]
    setup.close()


def test_reused_insert_across_autocommit_switches(conn):
    """The DB-API cursor keeps the INSERT it prepared while the SQL text
    stays the same. With autocommit off it runs in each transaction the
    driver begins; after set_autocommit(True) (which commits and begins
    none) it commits on its own; after set_autocommit(False) it runs in the
    new transaction again, so rollback() undoes it."""
    setup = conn.cursor()
    setup.execute("CREATE TABLE py_ac (n BIGINT)")

    def count():
        setup.execute("SELECT count(*) FROM py_ac")
        return setup.fetchall()[0][0]

    with flight_sql.connect(URI) as tx, tx.cursor() as cur:
        for i in range(3):
            cur.execute("INSERT INTO py_ac VALUES (?)", (i,))
            tx.commit()
        assert count() == 3
        tx.adbc_connection.set_autocommit(True)
        cur.execute("INSERT INTO py_ac VALUES (?)", (10,))
        assert count() == 4
        tx.adbc_connection.set_autocommit(False)
        cur.execute("INSERT INTO py_ac VALUES (?)", (20,))
        assert count() == 4
        tx.rollback()
        assert count() == 4
        cur.execute("INSERT INTO py_ac VALUES (?)", (30,))
        tx.commit()
    assert count() == 5
    setup.close()
