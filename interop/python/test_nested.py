"""Struct, list and map columns from pyarrow and polars through ADBC: stored
as ROW, ARRAY and MAP, queried by field access and subscripts, returned as
Arrow struct, list and map."""
import os

import adbc_driver_flightsql.dbapi as flight_sql
import polars as pl
import pyarrow as pa
import pytest

URI = os.environ["FLIGHTD_URI"]


@pytest.fixture
def conn():
    with flight_sql.connect(URI, autocommit=True) as c:
        yield c


def test_pyarrow_nested_ingest(conn):
    person = pa.struct([("id", pa.int64()), ("name", pa.large_string())])
    tbl = pa.table({
        "k": pa.array([1, 2], pa.int32()),
        "person": pa.array([{"id": 7, "name": "ann"}, None], person),
        "tags": pa.array([["x", "y"], []], pa.large_list(pa.string())),
        "attrs": pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int64())),
    })
    cur = conn.cursor()
    assert cur.adbc_ingest("py_nested", tbl, mode="create") == 2
    cur.execute("SELECT k, person.name, tags[2], attrs['a'], CARDINALITY(tags) FROM py_nested ORDER BY k")
    assert cur.fetchall() == [(1, "ann", "y", 1, 2), (2, None, None, None, 0)]
    cur.execute("SELECT person, tags, attrs FROM py_nested WHERE k = 1")
    got = cur.fetch_arrow_table()
    assert got.schema.field("person").type == pa.struct([("id", pa.int64()), ("name", pa.string())])
    assert pa.types.is_list(got.schema.field("tags").type)
    assert pa.types.is_map(got.schema.field("attrs").type)
    assert got.to_pylist() == [{"person": {"id": 7, "name": "ann"}, "tags": ["x", "y"], "attrs": [("a", 1)]}]
    cur.close()


def test_polars_nested_write(conn):
    df = pl.DataFrame({"id": [1, 2], "xs": [[1, 2, 3], [4]], "r": [{"a": 1, "b": "p"}, {"a": 2, "b": "q"}]})
    assert df.write_database("pl_nested", connection=conn, engine="adbc") == 2
    back = pl.read_database("SELECT id, xs[3] AS third, r.b AS b FROM pl_nested ORDER BY id", connection=conn)
    assert back.to_dicts() == [{"id": 1, "third": 3, "b": "p"}, {"id": 2, "third": None, "b": "q"}]
    back = pl.read_database("SELECT id, x FROM pl_nested CROSS JOIN UNNEST(xs) AS t(x) ORDER BY id, x", connection=conn)
    assert back["x"].to_list() == [1, 2, 3, 4]
