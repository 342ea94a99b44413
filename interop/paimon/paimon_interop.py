"""pypaimon's side of flightd's Paimon interop test (tablestore
TestPaimonInterop drives it; it is not a pytest file).

  read WAREHOUSE DB.TABLE...
                            print the tables' rows as pypaimon reads them
  write WAREHOUSE SEED      create and fill tables with pypaimon, print
                            the rows each should hold
  upsert WAREHOUSE DB.TABLE N
                            write (k, "paimon-k", k) for k < N into a key
                            table (k BIGINT NOT NULL, a STRING, b INT),
                            then print its rows as read

Rows are printed as JSON: {"table": [["v1", "v2", ...], ...]}, values as
strings (NULL for null, true/false for booleans), sorted.
"""
import json
import random
import sys

import pyarrow as pa
from pypaimon import CatalogFactory, Schema


def render(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def read_rows(catalog, name):
    table = catalog.get_table(name)
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    data = rb.new_read().to_arrow(splits)
    cols = [c.name for c in table.table_schema.fields]
    rows = [[render(r[c]) for c in cols] for r in data.to_pylist()]
    return sorted(rows)


def write_tables(catalog, seed):
    rnd = random.Random(seed)
    catalog.create_database("py", True)
    out = {}

    app_schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("n", pa.int32())])
    catalog.create_table("py.app", Schema.from_pyarrow_schema(app_schema), False)
    rows = []
    table = catalog.get_table("py.app")
    for commit in range(2):
        batch = [(commit * 100 + i, None if rnd.random() < 0.2 else "s%d" % rnd.randrange(1000),
                  rnd.randrange(-1000, 1000)) for i in range(rnd.randrange(1, 50))]
        commit_rows(table, app_schema, batch)
        rows += batch
    out["py.app"] = sorted([[render(v) for v in r] for r in rows])

    pk_schema = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                           ("v", pa.string())])
    catalog.create_table("py.pk", Schema.from_pyarrow_schema(
        pk_schema, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}), False)
    table = catalog.get_table("py.pk")
    model = {}
    for commit in range(3):
        batch = {}
        for _ in range(rnd.randrange(1, 40)):
            k = rnd.randrange(30)
            batch[("d%d" % (k % 2), k)] = "c%d-%d" % (commit, rnd.randrange(100))
        commit_rows(table, pk_schema, [(dt, k, v) for (dt, k), v in batch.items()])
        model.update(batch)
    out["py.pk"] = sorted([[dt, str(k), v] for (dt, k), v in model.items()])
    return out


def commit_rows(table, schema, rows):
    wb = table.new_batch_write_builder()
    write = wb.new_write()
    commit = wb.new_commit()
    write.write_arrow(pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema))
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()


def main():
    cmd, warehouse = sys.argv[1], sys.argv[2]
    catalog = CatalogFactory.create({"warehouse": warehouse})
    if cmd == "read":
        print(json.dumps({name: read_rows(catalog, name) for name in sys.argv[3:]}))
    elif cmd == "upsert":
        schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.int32())])
        n = int(sys.argv[4])
        commit_rows(catalog.get_table(sys.argv[3]), schema, [(k, "paimon-%d" % k, k) for k in range(n)])
        print(json.dumps({sys.argv[3]: read_rows(catalog, sys.argv[3])}))
    elif cmd == "write":
        print(json.dumps(write_tables(catalog, int(sys.argv[3]))))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
