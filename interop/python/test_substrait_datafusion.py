"""Substrait plans from Apache DataFusion's producer, run by flightd.

DataFusion (PyPI datafusion, datafusion.substrait) plans SQL over tables
registered with the schemas (and data) of flightd's tables; the plans go to
flightd through ADBC (cursor.execute(plan_bytes) sends a Substrait command)
and must give the answer of the same SQL run on flightd. Run through
`go test ./flightsql -run Interop`. Each test prints which plans flightd
accepts (pytest -s, or the Go test's log).
"""
import decimal
import glob
import os
import re

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pytest

datafusion = pytest.importorskip("datafusion")
from datafusion.substrait import Serde  # noqa: E402

URI = os.environ["FLIGHTD_URI"]
TPCDS = os.environ.get("TPCDS_DIR", os.path.join(os.path.dirname(__file__), "../../../shared/bench/tpcds"))


@pytest.fixture
def conn():
    with flight_sql.connect(URI, autocommit=True) as c:
        yield c


def num(v):
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def rows(table):
    """A result's rows, sorted on values rounded to 4 significant digits."""
    out = [tuple(float(v) if num(v) else v for v in r.values()) for r in table.to_pylist()]
    return sorted(out, key=lambda r: tuple((v is not None, f"{v:.4g}" if num(v) else str(v)) for v in r))


def same(want, got):
    """Equal but for numbers within 1e-5 relative (1e-6 absolute): a
    DataFusion plan casts to its own types (DECIMAL(38, 6) quotients, DOUBLE
    ratios), which flightd runs as the plan says, where flightd's SQL keeps
    more digits."""
    def close(a, b):
        if num(a) and num(b):
            return abs(a - b) <= 1e-6 + 1e-5 * abs(a)
        return a == b
    return len(want) == len(got) and all(
        len(w) == len(g) and all(close(a, b) for a, b in zip(w, g)) for w, g in zip(want, got))


# DataFusion's producer writes its __grouping_id (a bitmask, between the
# keys and the measures in its own layout) where Substrait has the grouping
# set's index after the measures (apache/datafusion#25208, open): plans of
# several grouping sets give shifted columns. Reported, not asserted.
GROUPING_SETS = re.compile(r"\b(ROLLUP|CUBE|GROUPING\s+SETS)\b", re.I)


def run(conn, ctx, sql):
    """The SQL answer, DataFusion's plan's answer on flightd, or the error."""
    cur = conn.cursor()
    cur.execute(sql)
    want = rows(cur.fetch_arrow_table())
    plan = Serde.serialize_bytes(sql, ctx)
    cur.execute(plan)
    got = rows(cur.fetch_arrow_table())
    cur.close()
    return want, got


EMP = pa.table({
    "id": pa.array([1, 2, 3, 4, 5], pa.int32()),
    "dept": pa.array([1, 1, 2, None, 2], pa.int32()),
    "name": ["ann", "bob", "cy", "di", "ed"],
    "salary": pa.array([100.5, 80.0, None, 120.25, 95.0], pa.float64()),
})
DEPT = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "title": ["eng", "ops", "hr"]})

QUERIES = [
    "SELECT id + 1, name FROM py_sub_emp WHERE id > 1 AND name LIKE 'b%' OR salary IS NULL",
    "SELECT dept, count(*), sum(salary), min(name), max(id) FROM py_sub_emp GROUP BY dept",
    "SELECT e.name, d.title FROM py_sub_emp e LEFT JOIN py_sub_dept d ON e.dept = d.id",
    "SELECT e.name, d.title FROM py_sub_emp e FULL JOIN py_sub_dept d ON e.dept = d.id",
    "SELECT e.name, d.title FROM py_sub_emp e, py_sub_dept d WHERE e.dept = d.id AND d.title <> 'hr'",
    "SELECT name FROM py_sub_emp WHERE dept IN (SELECT id FROM py_sub_dept WHERE title LIKE 'e%')",
    "SELECT title FROM py_sub_dept d WHERE NOT EXISTS (SELECT 1 FROM py_sub_emp e WHERE e.dept = d.id)",
    "SELECT name, (SELECT max(id) FROM py_sub_dept) FROM py_sub_emp",
    "SELECT name FROM py_sub_emp WHERE salary > (SELECT avg(salary) FROM py_sub_emp)",
    "SELECT CAST(id AS BIGINT), CASE WHEN id > 2 THEN 'high' ELSE 'low' END FROM py_sub_emp",
    "SELECT CASE dept WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'other' END FROM py_sub_emp",
    "SELECT id, row_number() OVER (PARTITION BY dept ORDER BY id) FROM py_sub_emp",
    "SELECT id, sum(salary) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM py_sub_emp",
    "SELECT id FROM py_sub_emp UNION SELECT id FROM py_sub_dept",
    "SELECT id FROM py_sub_emp UNION ALL SELECT id FROM py_sub_dept",
    "SELECT id FROM py_sub_emp EXCEPT SELECT id FROM py_sub_dept",
    "SELECT id FROM py_sub_emp INTERSECT SELECT id FROM py_sub_dept",
    "SELECT DISTINCT dept FROM py_sub_emp",
    "SELECT name FROM py_sub_emp ORDER BY salary DESC NULLS LAST LIMIT 2",
    "SELECT count(DISTINCT dept) FROM py_sub_emp",
    "SELECT upper(name), length(name), substr(name, 1, 2), coalesce(dept, 0) FROM py_sub_emp",
    "SELECT dept, name, count(*) FROM py_sub_emp GROUP BY GROUPING SETS ((dept), (dept, name), ())",
    "SELECT dept, count(*) FROM py_sub_emp GROUP BY dept HAVING count(*) > 1",
]


def test_datafusion_plans(conn):
    cur = conn.cursor()
    cur.adbc_ingest("py_sub_emp", EMP, mode="replace")
    cur.adbc_ingest("py_sub_dept", DEPT, mode="replace")
    cur.close()
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("py_sub_emp", [EMP.to_batches()])
    ctx.register_record_batches("py_sub_dept", [DEPT.to_batches()])
    failed = []
    for q in QUERIES:
        try:
            want, got = run(conn, ctx, q)
            ok = same(want, got)
            print(("ok     " if ok else "WRONG  ") + q)
            if not ok and not GROUPING_SETS.search(q):
                failed.append(f"{q}: got {got}, want {want}")
        except Exception as e:  # noqa: BLE001 - reported per query
            print("REFUSED " + q + ": " + str(e).splitlines()[0])
            failed.append(f"{q}: {e}")
    print(f"DataFusion plans: {len(QUERIES) - len(failed)} of {len(QUERIES)} run (grouping sets: see GROUPING_SETS)")
    assert not failed, "\n".join(failed)


def test_datafusion_tpcds_plans(conn):
    """DataFusion's plans of the 99 TPC-DS queries over flightd's (empty)
    TPC-DS tables: which flightd accepts, and that those give the SQL
    answer."""
    schema_dir, query_dir = os.path.join(TPCDS, "schema"), os.path.join(TPCDS, "queries")
    if not os.path.isdir(query_dir):
        pytest.skip(f"TPC-DS queries not found at {query_dir} (set TPCDS_DIR)")
    ctx = datafusion.SessionContext()
    cur = conn.cursor()
    for f in sorted(glob.glob(os.path.join(schema_dir, "*.sql"))):
        ddl = re.sub(r"^\s*create\s+table", "CREATE TABLE IF NOT EXISTS", open(f).read().strip().rstrip(";"), flags=re.I)
        cur.execute(ddl)
        ctx.sql(ddl).collect()
    cur.close()
    accepted, planned, report = 0, 0, []
    wrong = []
    for f in sorted(glob.glob(os.path.join(query_dir, "*.sql"))):
        name = "q" + os.path.basename(f)[:-4]
        sql = re.sub(r"--[^\n]*", "", open(f).read()).strip().rstrip(";")
        try:
            Serde.serialize_bytes(sql, ctx)
        except Exception as e:  # noqa: BLE001 - DataFusion cannot plan it
            report.append(f"{name}: DataFusion cannot plan it: {str(e).splitlines()[0][:120]}")
            continue
        planned += 1
        try:
            want, got = run(conn, ctx, sql)
        except Exception as e:  # noqa: BLE001 - reported per query
            report.append(f"{name}: refused: {str(e).splitlines()[0][:400]}")
            continue
        accepted += 1
        if same(want, got):
            report.append(f"{name}: ok")
        elif GROUPING_SETS.search(sql):
            report.append(f"{name}: wrong: grouping sets (apache/datafusion#25208)")
        else:
            wrong.append(name)
            report.append(f"{name}: WRONG: got {got[:2]}, want {want[:2]}")
    print("\n".join(report))
    print(f"TPC-DS: DataFusion plans {planned} of 99; flightd runs {accepted} of them, {len(wrong)} with a wrong answer")
    assert not wrong, wrong
    assert planned > 0
