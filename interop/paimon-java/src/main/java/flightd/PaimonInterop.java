package flightd;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

/**
 * Paimon Java's side of flightd's interop test (tablestore TestPaimonJavaInterop drives it).
 *
 * <pre>
 *   read WAREHOUSE DB.TABLE...
 *                             print the tables' rows as Paimon Java reads them
 *   write WAREHOUSE SEED      create and fill tables with Paimon Java, print the rows each holds
 *   upsert WAREHOUSE DB.TABLE N
 *                             write (k, "paimon-k", k) for k &lt; N into a key table
 *                             (k BIGINT NOT NULL, a STRING, b INT), then print its rows as read
 * </pre>
 *
 * Output is JSON as interop/paimon/paimon_interop.py prints it: {"db.t": [["v1", ...], ...]},
 * values as strings (NULL for null), rows in any order.
 */
public final class PaimonInterop {
    public static void main(String[] args) throws Exception {
        Options options = new Options();
        options.set("warehouse", args[1]);
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            Map<String, List<List<String>>> out = new TreeMap<>();
            switch (args[0]) {
                case "read":
                    for (int i = 2; i < args.length; i++) {
                        out.put(args[i], read(catalog.getTable(Identifier.fromString(args[i]))));
                    }
                    break;
                case "upsert":
                    List<GenericRow> rows = new ArrayList<>();
                    for (int k = 0; k < Integer.parseInt(args[3]); k++) {
                        rows.add(GenericRow.of((long) k, BinaryString.fromString("paimon-" + k), k));
                    }
                    commit(catalog.getTable(Identifier.fromString(args[2])), rows);
                    out.put(args[2], read(catalog.getTable(Identifier.fromString(args[2]))));
                    break;
                case "write":
                    write(catalog, new Random(Long.parseLong(args[2])), out);
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + args[0]);
            }
            System.out.println(json(out));
        }
    }

    static List<List<String>> read(Table table) throws Exception {
        ReadBuilder rb = table.newReadBuilder();
        List<DataField> fields = table.rowType().getFields();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < fields.size(); i++) {
            getters.add(InternalRow.createFieldGetter(fields.get(i).type(), i));
        }
        List<List<String>> rows = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan())) {
            reader.forEachRemaining(row -> {
                List<String> vals = new ArrayList<>();
                for (InternalRow.FieldGetter g : getters) {
                    Object v = g.getFieldOrNull(row);
                    vals.add(v == null ? "NULL" : v.toString());
                }
                rows.add(vals);
            });
        }
        return rows;
    }

    static void write(Catalog catalog, Random rnd, Map<String, List<List<String>>> out) throws Exception {
        catalog.createDatabase("java", true);

        Identifier app = Identifier.create("java", "app");
        catalog.createTable(app, Schema.newBuilder()
                .column("id", DataTypes.BIGINT())
                .column("s", DataTypes.STRING())
                .column("n", DataTypes.INT())
                .build(), false);
        List<List<String>> appRows = new ArrayList<>();
        for (int commit = 0; commit < 2; commit++) {
            List<GenericRow> batch = new ArrayList<>();
            int n = 1 + rnd.nextInt(50);
            for (int i = 0; i < n; i++) {
                long id = commit * 100L + i;
                String s = rnd.nextInt(5) == 0 ? null : "s" + rnd.nextInt(1000);
                int v = rnd.nextInt(2000) - 1000;
                batch.add(GenericRow.of(id, s == null ? null : BinaryString.fromString(s), v));
                appRows.add(List.of(Long.toString(id), s == null ? "NULL" : s, Integer.toString(v)));
            }
            commit(catalog.getTable(app), batch);
        }
        out.put("java.app", appRows);

        // A partitioned key table in 2 fixed buckets, upserts then deletes.
        Identifier pk = Identifier.create("java", "pk");
        catalog.createTable(pk, Schema.newBuilder()
                .column("dt", DataTypes.STRING().notNull())
                .column("id", DataTypes.BIGINT().notNull())
                .column("v", DataTypes.STRING())
                .partitionKeys("dt")
                .primaryKey("dt", "id")
                .option("bucket", "2")
                .build(), false);
        Map<Long, String> model = new TreeMap<>();
        for (int commit = 0; commit < 3; commit++) {
            List<GenericRow> batch = new ArrayList<>();
            Map<Long, String> changed = new TreeMap<>();
            int n = 1 + rnd.nextInt(40);
            for (int i = 0; i < n; i++) {
                changed.put((long) rnd.nextInt(30), "c" + commit + "-" + rnd.nextInt(100));
            }
            for (Map.Entry<Long, String> e : changed.entrySet()) {
                long k = e.getKey();
                BinaryString dt = BinaryString.fromString("d" + (k % 2));
                if (commit == 2 && rnd.nextInt(3) == 0) {
                    batch.add(GenericRow.ofKind(RowKind.DELETE, dt, k, null));
                    model.remove(k);
                } else {
                    batch.add(GenericRow.of(dt, k, BinaryString.fromString(e.getValue())));
                    model.put(k, e.getValue());
                }
            }
            commit(catalog.getTable(pk), batch);
        }
        List<List<String>> pkRows = new ArrayList<>();
        model.forEach((k, v) -> pkRows.add(List.of("d" + (k % 2), Long.toString(k), v)));
        out.put("java.pk", pkRows);
    }

    static void commit(Table table, List<GenericRow> rows) throws Exception {
        BatchWriteBuilder wb = table.newBatchWriteBuilder();
        try (BatchTableWrite write = wb.newWrite(); BatchTableCommit commit = wb.newCommit()) {
            for (GenericRow r : rows) {
                write.write(r);
            }
            commit.commit(write.prepareCommit());
        }
    }

    static String json(Map<String, List<List<String>>> out) {
        StringBuilder sb = new StringBuilder("{");
        String sep = "";
        for (Map.Entry<String, List<List<String>>> e : out.entrySet()) {
            sb.append(sep).append(quote(e.getKey())).append(":[");
            sep = ",";
            String rsep = "";
            for (List<String> row : e.getValue()) {
                sb.append(rsep).append('[');
                rsep = ",";
                String vsep = "";
                for (String v : row) {
                    sb.append(vsep).append(quote(v));
                    vsep = ",";
                }
                sb.append(']');
            }
            sb.append(']');
        }
        return sb.append('}').toString();
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
