"""COPY between tables and Parquet/CSV files of the server's files
directory, with files pyarrow and pandas write and read, and Paimon's
system tables read through ADBC."""
import os

import adbc_driver_flightsql.dbapi as flight_sql
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

URI = os.environ["FLIGHTD_URI"]
FILES = os.environ["FLIGHTD_FILES_DIR"]


@pytest.fixture
def conn():
    with flight_sql.connect(URI, autocommit=True) as c:
        yield c


def test_copy_from_pyarrow_parquet(conn):
    # Physical variants ingest converts: large_string, uint8, nanosecond
    # timestamps, dictionaries.
    tbl = pa.table({
        "id": pa.array([1, 2, 3], pa.uint8()),
        "name": pa.array(["a", None, "c"], pa.large_string()),
        "ts": pa.array([1_700_000_000_000_000_000, None, 0], pa.timestamp("ns")),
        "tag": pa.array(["x", "y", "x"]).dictionary_encode(),
    })
    pq.write_table(tbl, os.path.join(FILES, "py_in.parquet"))
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_copy (id INT, name STRING, ts TIMESTAMP(6), tag STRING)")
    cur.execute("COPY py_copy FROM 'py_in.parquet'")
    cur.execute("SELECT id, name, CAST(ts AS STRING), tag FROM py_copy ORDER BY id")
    assert cur.fetchall() == [(1, "a", "2023-11-14 22:13:20.000000", "x"), (2, None, None, "y"), (3, "c", "1970-01-01 00:00:00.000000", "x")]

    cur.execute("COPY (SELECT id, name FROM py_copy WHERE id > 1) TO 'py_out.parquet'")
    back = pq.read_table(os.path.join(FILES, "py_out.parquet"))
    assert back.column_names == ["id", "name"]
    assert sorted(back.to_pylist(), key=lambda r: r["id"]) == [{"id": 2, "name": None}, {"id": 3, "name": "c"}]

    cur.execute("COPY py_copy TO 'py_out.csv' (FORMAT csv, DELIMITER ';')")
    df = pd.read_csv(os.path.join(FILES, "py_out.csv"), sep=";")
    assert list(df.columns) == ["id", "name", "ts", "tag"]
    assert sorted(df["id"].tolist()) == [1, 2, 3]

    # The files read as tables, in their stored types.
    cur.execute("SELECT id, name, tag FROM read_parquet('py_in.parquet') ORDER BY id")
    got = cur.fetch_arrow_table()
    assert got.schema.field("id").type == pa.int16()  # uint8 as ingest stores it
    assert got.schema.field("name").type == pa.string()
    assert got.to_pylist() == [{"id": 1, "name": "a", "tag": "x"}, {"id": 2, "name": None, "tag": "y"}, {"id": 3, "name": "c", "tag": "x"}]
    pd.DataFrame({"a": [1, 2], "b": ["p", None]}).to_csv(os.path.join(FILES, "pd.csv"), index=False)
    cur.execute("SELECT a, b FROM read_csv(ARRAY['pd.csv', 'pd.csv']) ORDER BY a, b")
    assert cur.fetchall() == [(1, "p"), (1, "p"), (2, None), (2, None)]

    # A file outside the directory is refused, and the table unchanged.
    with pytest.raises(flight_sql.Error) as e:
        cur.execute("COPY py_copy FROM '../py_in.parquet'")
    assert "42501" in str(e.value)
    cur.execute("SELECT count(*) FROM py_copy")
    assert cur.fetchall() == [(3,)]
    cur.close()


def test_system_tables_through_adbc(conn):
    cur = conn.cursor()
    cur.execute("CREATE TABLE py_sys (k INT NOT NULL, v STRING, PRIMARY KEY (k) NOT ENFORCED)")
    cur.execute("INSERT INTO py_sys VALUES (1, 'a'), (2, 'b')")
    cur.execute("DELETE FROM py_sys WHERE k = 2")
    cur.execute("SELECT rowkind, k, v FROM py_sys$audit_log ORDER BY k")
    assert cur.fetchall() == [("+I", 1, "a"), ("-D", 2, "b")]
    cur.execute("SELECT schema_id, primary_keys FROM py_sys$schemas")
    assert cur.fetchall() == [(0, '["k"]')]
    cur.execute("SELECT count(*) FROM py_sys$manifests")
    assert cur.fetchall()[0][0] >= 1
    cur.execute("CALL sys.compact('py_sys')")
    cur.execute("SELECT * FROM py_sys$ro")
    assert cur.fetch_arrow_table().to_pylist() == [{"k": 1, "v": "a"}]
    with pytest.raises(flight_sql.Error):
        cur.execute("INSERT INTO py_sys$ro VALUES (3, 'c')")
    cur.close()
