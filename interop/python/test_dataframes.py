"""pandas and polars writing through ADBC: they send large_utf8 or
string_view, timestamp[ns] or [us] and int64, which flightd stores as the
table's types."""
import os

import adbc_driver_flightsql.dbapi as flight_sql
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

URI = os.environ["FLIGHTD_URI"]


@pytest.fixture
def conn():
    with flight_sql.connect(URI, autocommit=True) as c:
        yield c


def frame():
    return pd.DataFrame({"id": [1, 2, 3], "name": ["ann", "bob", None], "score": [1.5, None, 3.25],
                         "at": pd.to_datetime(["2024-01-01 10:00", "2024-01-02 11:30", None]),
                         "kind": pd.Categorical(["a", "b", "a"])})


def test_pandas_adbc_ingest(conn):
    cur = conn.cursor()
    assert cur.adbc_ingest("pd_ingest", frame(), mode="create") == 3
    cur.execute("SELECT id, name, score, at, kind FROM pd_ingest ORDER BY id")
    got = cur.fetch_arrow_table()
    assert got.schema.field("name").type == pa.string()  # stored and returned as utf8
    assert got.column("name").to_pylist() == ["ann", "bob", None]
    assert got.column("kind").to_pylist() == ["a", "b", "a"]
    assert str(got.column("at")[1].as_py()) == "2024-01-02 11:30:00"
    cur.close()


def test_pandas_to_sql(conn):
    df = frame()
    assert df.to_sql("pd_to_sql", conn, index=False) == 3
    # Appending into the existing table converts to its types.
    assert df.to_sql("pd_to_sql", conn, index=False, if_exists="append") == 3
    back = pd.read_sql("SELECT id, name FROM pd_to_sql ORDER BY id, name", conn)
    assert back["id"].tolist() == [1, 1, 2, 2, 3, 3]



def test_zero_rows(conn):
    # pyarrow makes a table of no chunks from an empty frame, and the
    # driver (arrow-go's Flight SQL client) sends nothing for no batches:
    # the error says so.
    with pytest.raises(pd.errors.DatabaseError) as err:
        frame().iloc[:0].to_sql("pd_empty", conn, index=False)
    assert "empty stream" in str(err.value.__cause__)
    # With the schema in one empty batch the table is created.
    tbl = pa.Table.from_pandas(frame().iloc[:0], preserve_index=False)
    rdr = pa.RecordBatchReader.from_batches(tbl.schema, [pa.record_batch(
        [pa.array([], f.type) for f in tbl.schema], schema=tbl.schema)])
    cur = conn.cursor()
    assert cur.adbc_ingest("pd_empty", rdr, mode="create") == 0
    cur.execute("SELECT count(*) FROM pd_empty")
    assert cur.fetchall() == [(0,)]
    cur.close()


def test_pandas_into_declared_types(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE pd_typed (id INT, name VARCHAR, at TIMESTAMP(3), t TIME)")
    df = pd.DataFrame({"id": [7], "name": ["x"], "at": pd.to_datetime(["2024-05-06 07:08:09.123"]),
                       "t": [pd.Timestamp("2024-01-01 12:34:56").time()]})
    assert cur.adbc_ingest("pd_typed", df, mode="append") == 1
    cur.execute("SELECT id, name, CAST(at AS STRING), CAST(t AS STRING) FROM pd_typed")
    assert cur.fetchall() == [(7, "x", "2024-05-06 07:08:09.123", "12:34:56")]
    cur.close()


def test_polars_write_database(conn):
    df = pl.DataFrame({"id": [1, 2], "name": ["ann", "bob"], "tag": pl.Series(["x", "y"], dtype=pl.Categorical)})
    assert df.write_database("pl_write", connection=conn, engine="adbc") == 2
    assert df.write_database("pl_write", connection=conn, engine="adbc", if_table_exists="append") == 2
    back = pl.read_database("SELECT id, name, tag FROM pl_write ORDER BY id, name", connection=conn)
    assert back["name"].to_list() == ["ann", "ann", "bob", "bob"]
    assert back["tag"].to_list() == ["x", "x", "y", "y"]


def test_string_view_parameters(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_sv (k BIGINT, v VARCHAR)")
    cur.execute("INSERT INTO py_sv VALUES (1, 'one'), (2, 'two')")
    params = pa.record_batch([pa.array(["two"], pa.string_view())], names=["0"])
    cur.execute("SELECT k FROM py_sv WHERE v = ?", parameters=params)
    assert cur.fetchall() == [(2,)]
    cur.close()
