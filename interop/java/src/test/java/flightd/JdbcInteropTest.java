package flightd;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The Arrow Flight SQL JDBC driver against a running flightd. The Go test
 * (flightsql/interop_test.go) starts flightd, creates table "big" with
 * 1,000,000 rows (id 0..999999), and passes the address in FLIGHTD_URI.
 */
public class JdbcInteropTest {
  private static Connection conn;

  @BeforeClass
  public static void connect() throws Exception {
    String uri = System.getenv("FLIGHTD_URI");
    if (uri == null || uri.isEmpty()) {
      throw new IllegalStateException("FLIGHTD_URI is not set: run through go test ./flightsql -run Interop");
    }
    String hostPort = uri.replaceFirst("^grpc(\\+tcp)?://", "");
    conn = DriverManager.getConnection("jdbc:arrow-flight-sql://" + hostPort + "/?useEncryption=false");
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE jdbc_items (id INT NOT NULL, name VARCHAR, price DOUBLE, PRIMARY KEY (id) NOT ENFORCED)");
      assertEquals(3, st.executeUpdate("INSERT INTO jdbc_items VALUES (1, 'apple', 0.5), (2, 'pear', 0.75), (3, NULL, 2.0)"));
    }
  }

  @AfterClass
  public static void close() throws Exception {
    if (conn != null) {
      conn.close();
    }
  }

  @Test
  public void databaseMetaData() throws Exception {
    DatabaseMetaData md = conn.getMetaData();
    assertEquals("flightd", md.getDatabaseProductName());

    List<String> catalogs = new ArrayList<>();
    try (ResultSet rs = md.getCatalogs()) {
      while (rs.next()) catalogs.add(rs.getString("TABLE_CAT"));
    }
    assertEquals(List.of("flightd"), catalogs);

    boolean sawDefault = false;
    try (ResultSet rs = md.getSchemas()) {
      while (rs.next()) sawDefault |= "default".equals(rs.getString("TABLE_SCHEM"));
    }
    assertTrue("schema default listed", sawDefault);

    boolean sawTable = false;
    try (ResultSet rs = md.getTables(null, null, "jdbc_%", null)) {
      while (rs.next()) sawTable |= "jdbc_items".equals(rs.getString("TABLE_NAME"));
    }
    assertTrue("table jdbc_items listed", sawTable);

    List<String> cols = new ArrayList<>();
    try (ResultSet rs = md.getColumns(null, null, "jdbc_items", null)) {
      while (rs.next()) cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME") + ":" + rs.getInt("NULLABLE"));
    }
    assertEquals(List.of("id:INT:0", "name:STRING:1", "price:DOUBLE:1"), cols);

    assertEquals("\"", md.getIdentifierQuoteString());
    assertTrue(md.supportsTransactions());

    List<String> pk = new ArrayList<>();
    try (ResultSet rs = md.getPrimaryKeys(null, null, "jdbc_items")) {
      while (rs.next()) pk.add(rs.getString("COLUMN_NAME"));
    }
    assertEquals(List.of("id"), pk);
  }

  @Test
  public void preparedStatementWithParameters() throws Exception {
    try (PreparedStatement ps = conn.prepareStatement("SELECT name, price FROM jdbc_items WHERE id = ?")) {
      ps.setInt(1, 2);
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next());
        assertEquals("pear", rs.getString(1));
        assertEquals(0.75, rs.getDouble(2), 0);
        assertFalse(rs.next());
      }
      ps.setInt(1, 3);
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next());
        assertEquals(null, rs.getString(1));
      }
    }
  }

  /**
   * Prepared point queries on the whole primary key take the lookup path (EXPLAIN shows
   * LookupScan) and answer as a scan of the table does, for random hits and misses (seed printed).
   */
  @Test
  public void preparedPointLookups() throws Exception {
    long seed = System.nanoTime();
    System.out.println("preparedPointLookups seed " + seed);
    java.util.Random r = new java.util.Random(seed);
    String[] names = {"a", "b", "c"};
    java.util.Map<String, String> table = new java.util.HashMap<>();
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE jdbc_kv (k BIGINT NOT NULL, s VARCHAR NOT NULL, v VARCHAR, PRIMARY KEY (k, s) NOT ENFORCED) WITH ('bucket' = '4')");
      StringBuilder values = new StringBuilder();
      for (int i = 0; i < 200; i++) {
        if (i > 0) values.append(", ");
        values.append("(").append(r.nextInt(100)).append(", '").append(names[r.nextInt(3)]).append("', 'v").append(i).append("')");
      }
      st.executeUpdate("INSERT INTO jdbc_kv VALUES " + values);
      StringBuilder plan = new StringBuilder();
      try (ResultSet rs = st.executeQuery("EXPLAIN SELECT v FROM jdbc_kv WHERE k = ? AND s = ?")) {
        while (rs.next()) plan.append(rs.getString(1)).append("\n");
      }
      assertTrue(plan.toString(), plan.toString().contains("LookupScan default.jdbc_kv [k, s, v] keys: k = $1 AND s = $2"));
      try (ResultSet rs = st.executeQuery("SELECT k, s, v FROM jdbc_kv")) {
        while (rs.next()) table.put(rs.getLong(1) + "|" + rs.getString(2), rs.getString(3));
      }
    }
    try (PreparedStatement ps = conn.prepareStatement("SELECT v FROM jdbc_kv WHERE k = ? AND s = ?")) {
      for (int i = 0; i < 300; i++) {
        long k = r.nextInt(120);
        String s = names[r.nextInt(3)];
        ps.setLong(1, k);
        ps.setString(2, s);
        List<String> got = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) got.add(rs.getString(1));
        }
        String want = table.get(k + "|" + s);
        assertEquals("key " + k + "|" + s + " (seed " + seed + ")", want == null ? List.of() : List.of(want), got);
      }
    }
  }

  @Test
  public void resultSetMetaData() throws Exception {
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE jdbc_money (id INT NOT NULL, amount DECIMAL(10,2), at TIMESTAMP(3))");
      st.executeUpdate("INSERT INTO jdbc_money VALUES (1, 12.34, TIMESTAMP '2024-01-02 03:04:05.678')");
    }
    try (PreparedStatement ps = conn.prepareStatement("SELECT id, amount, at FROM jdbc_money WHERE id = ?")) {
      ps.setInt(1, 1);
      try (ResultSet rs = ps.executeQuery()) {
        ResultSetMetaData md = rs.getMetaData();
        assertEquals(10, md.getPrecision(2));
        assertEquals(2, md.getScale(2));
        assertEquals(3, md.getScale(3));
        assertTrue(rs.next());
        assertEquals(new BigDecimal("12.34"), rs.getBigDecimal(2));
      }
    }
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT amount FROM jdbc_money")) {
      assertEquals(10, rs.getMetaData().getPrecision(1));
      assertEquals(2, rs.getMetaData().getScale(1));
    }
  }

  /**
   * An error quoting a long name (an unknown table's) reaches the driver as a SQLException with
   * flightd's message, clipped to its start and end, and its SQLSTATE; it went out whole (200 KB
   * here) before 2026-12-05. (A cast's error quotes 256 bytes of its value since 2026-12-06.)
   */
  @Test
  public void longErrorReachesDriver() throws Exception {
    try (Statement st = conn.createStatement()) {
      st.executeQuery("SELECT * FROM \"" + "x".repeat(200000) + "\"").close();
      throw new AssertionError("no error");
    } catch (java.sql.SQLException e) {
      String all = "";
      for (Throwable c = e; c != null; c = c.getCause()) {
        all += " | " + c.getMessage();
      }
      assertTrue(all, all.contains("SQLSTATE 42") && all.contains("bytes cut"));
    }
  }

  /**
   * A PreparedStatement runs in the session's transaction of the moment: prepared before BEGIN,
   * its row goes with the ROLLBACK; between transactions it commits on its own. Before
   * 2026-12-05 it ran outside the BEGIN it was not prepared in, and the ROLLBACK kept its row.
   */
  @Test
  public void preparedFollowsSessionTransaction() throws Exception {
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE jdbc_ptxn (id INT)");
      try (PreparedStatement ins = conn.prepareStatement("INSERT INTO jdbc_ptxn VALUES (?)")) {
        st.execute("BEGIN");
        ins.setInt(1, 1);
        ins.executeUpdate();
        st.execute("ROLLBACK");
        ins.setInt(1, 2);
        ins.executeUpdate();
        st.execute("BEGIN");
        ins.setInt(1, 3);
        ins.executeUpdate();
        st.execute("COMMIT");
      }
      try (ResultSet rs = st.executeQuery("SELECT sum(id), count(*) FROM jdbc_ptxn")) {
        assertTrue(rs.next());
        assertEquals(5, rs.getLong(1));
        assertEquals(2, rs.getLong(2));
      }
    }
  }

  /**
   * The driver's commit() and rollback() do nothing (ArrowFlightMetaImpl stubs them), so
   * setAutoCommit(false) gives no transaction; BEGIN, COMMIT and ROLLBACK as SQL text do, in the
   * connection's Flight session (its cookie).
   */
  @Test
  public void sqlTransactions() throws Exception {
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE jdbc_txn (id INT NOT NULL, PRIMARY KEY (id) NOT ENFORCED)");
      st.execute("BEGIN");
      st.executeUpdate("INSERT INTO jdbc_txn VALUES (1)");
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM jdbc_txn")) {
        assertTrue(rs.next());
        assertEquals(1, rs.getLong(1)); // the transaction reads its own writes
      }
      st.execute("ROLLBACK");
      try (ResultSet rs = st.executeQuery("SELECT count(*) FROM jdbc_txn")) {
        assertTrue(rs.next());
        assertEquals(0, rs.getLong(1));
      }
      st.execute("BEGIN");
      st.executeUpdate("INSERT INTO jdbc_txn VALUES (2)");
      st.executeUpdate("INSERT INTO jdbc_txn VALUES (3)");
      st.execute("COMMIT");
      try (ResultSet rs = st.executeQuery("SELECT sum(id), count(*) FROM jdbc_txn")) {
        assertTrue(rs.next());
        assertEquals(5, rs.getLong(1));
        assertEquals(2, rs.getLong(2));
      }
    }
  }

  /** The materialized-table statements through JDBC. */
  @Test
  public void materializedTables() throws Exception {
    try (Statement st = conn.createStatement()) {
      st.executeUpdate("CREATE TABLE jdbc_src (k INT NOT NULL, g INT, PRIMARY KEY (k) NOT ENFORCED)");
      st.executeUpdate("INSERT INTO jdbc_src VALUES (1, 1), (2, 1), (3, 2)");
      st.execute("CREATE MATERIALIZED TABLE jdbc_mt FRESHNESS = INTERVAL '1' HOUR AS SELECT g, count(*) AS n FROM jdbc_src GROUP BY g");
      st.executeUpdate("INSERT INTO jdbc_src VALUES (4, 2)");
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt REFRESH");
      try (ResultSet rs = st.executeQuery("SELECT sum(n) FROM jdbc_mt")) {
        assertTrue(rs.next());
        assertEquals(4, rs.getLong(1));
      }
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt SET FRESHNESS = INTERVAL '10' SECOND");
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt SUSPEND");
      String mode = null, status = null;
      try (ResultSet rs = st.executeQuery("DESCRIBE EXTENDED jdbc_mt")) {
        while (rs.next()) {
          if ("refresh_mode".equals(rs.getString(1))) mode = rs.getString(2);
          if ("status".equals(rs.getString(1))) status = rs.getString(2);
        }
      }
      assertEquals("CONTINUOUS", mode);
      assertEquals("SUSPENDED", status);
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt RESUME");
      st.execute("DROP MATERIALIZED TABLE jdbc_mt");
    }
  }

  /** DESCRIBE EXTENDED's rows of a materialized table as name -> value. */
  private static java.util.Map<String, String> describe(Statement st, String table) throws Exception {
    java.util.Map<String, String> d = new java.util.HashMap<>();
    try (ResultSet rs = st.executeQuery("DESCRIBE EXTENDED " + table)) {
      while (rs.next()) d.put(rs.getString(1), rs.getString(2));
    }
    return d;
  }

  private static String firstString(Statement st, String q) throws Exception {
    try (ResultSet rs = st.executeQuery(q)) {
      assertTrue(q, rs.next());
      return rs.getString(1);
    }
  }

  /**
   * The statements of issue 13 the test above leaves out: a column list with a watermark, IF NOT
   * EXISTS, CREATE OR ALTER, REFRESH PARTITION with a date formatter, RESUME WITH, AS SELECT,
   * SHOW CREATE (whose text creates the table again), SHOW MATERIALIZED TABLES, the per-database
   * freshness threshold and DROP IF EXISTS.
   */
  @Test
  public void materializedTableEveryStatement() throws Exception {
    try (Statement st = conn.createStatement()) {
      st.execute("CREATE DATABASE jdbc_mt WITH ('materialized-table.refresh-mode.freshness-threshold' = '2 h')");
      st.execute("CREATE TABLE jdbc_mt.orders (id BIGINT NOT NULL, ds STRING NOT NULL, amount INT, ts TIMESTAMP(3), PRIMARY KEY (id) NOT ENFORCED)");
      st.executeUpdate("INSERT INTO jdbc_mt.orders VALUES (1, '2026-11-30', 10, TIMESTAMP '2026-11-30 10:00:00'), (2, '2026-12-01', 5, NULL)");
      st.execute("CREATE MATERIALIZED TABLE jdbc_mt.typed (id BIGINT NOT NULL, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (id) NOT ENFORCED) FRESHNESS = INTERVAL '1' HOUR AS SELECT id, amount, ts FROM jdbc_mt.orders");
      java.util.Map<String, String> d = describe(st, "jdbc_mt.typed");
      assertEquals("CONTINUOUS", d.get("refresh_mode")); // under the database's 2 h threshold
      assertEquals("0", d.get("failures"));
      String ddl = firstString(st, "SHOW CREATE MATERIALIZED TABLE jdbc_mt.typed");
      assertTrue(ddl, ddl.contains("WATERMARK FOR ts AS (ts - INTERVAL '5' SECOND)"));
      st.execute("DROP MATERIALIZED TABLE jdbc_mt.typed");
      st.execute(ddl);
      st.execute("CREATE MATERIALIZED TABLE IF NOT EXISTS jdbc_mt.typed AS SELECT 1 AS x FROM jdbc_mt.orders");
      assertEquals("2", firstString(st, "SELECT count(*) FROM jdbc_mt.typed"));

      st.execute("ALTER DATABASE jdbc_mt SET ('materialized-table.refresh-mode.freshness-threshold' = '30 min')");
      st.execute("CREATE MATERIALIZED TABLE jdbc_mt.daily PARTITIONED BY (ds) WITH ('partition.fields.ds.date-formatter' = 'yyyy-MM-dd') FRESHNESS = INTERVAL '1' HOUR AS SELECT ds, sum(amount) AS total FROM jdbc_mt.orders GROUP BY ds");
      assertEquals("FULL", describe(st, "jdbc_mt.daily").get("refresh_mode"));
      st.executeUpdate("INSERT INTO jdbc_mt.orders VALUES (3, '2026-11-30', 1, NULL), (4, '2026-12-01', 2, NULL)");
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt.daily REFRESH PARTITION (ds = '2026-11-30')");
      List<String> rows = new ArrayList<>();
      try (ResultSet rs = st.executeQuery("SELECT ds, total FROM jdbc_mt.daily ORDER BY ds")) {
        while (rs.next()) rows.add(rs.getString(1) + "=" + rs.getLong(2));
      }
      assertEquals(List.of("2026-11-30=11", "2026-12-01=5"), rows); // only that partition
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt.daily SUSPEND");
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt.daily RESUME WITH ('write-buffer-size' = '4 mb')");
      ddl = firstString(st, "SHOW CREATE MATERIALIZED TABLE jdbc_mt.daily");
      assertTrue(ddl, ddl.contains("'write-buffer-size' = '4 mb'"));
      st.execute("ALTER MATERIALIZED TABLE jdbc_mt.daily AS SELECT ds, count(*) AS n FROM jdbc_mt.orders GROUP BY ds");
      assertEquals("2", firstString(st, "SELECT n FROM jdbc_mt.daily WHERE ds = '2026-11-30'"));
      st.execute("CREATE OR ALTER MATERIALIZED TABLE jdbc_mt.daily PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' HOUR AS SELECT ds, max(amount) AS top FROM jdbc_mt.orders GROUP BY ds");
      assertEquals("10", firstString(st, "SELECT top FROM jdbc_mt.daily WHERE ds = '2026-11-30'"));
      List<String> names = new ArrayList<>();
      try (ResultSet rs = st.executeQuery("SHOW MATERIALIZED TABLES FROM jdbc_mt")) {
        while (rs.next()) names.add(rs.getString(1));
      }
      assertEquals(List.of("daily", "typed"), names);
      st.execute("DROP MATERIALIZED TABLE IF EXISTS jdbc_mt.nope");
      st.execute("DROP MATERIALIZED TABLE jdbc_mt.daily");
      st.execute("DROP DATABASE jdbc_mt CASCADE");
    }
  }

  @Test
  public void millionRowResult() throws Exception {
    long rows = 0, sum = 0;
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT id FROM big")) {
      while (rs.next()) {
        rows++;
        sum += rs.getLong(1);
      }
    }
    assertEquals(1_000_000L, rows);
    assertEquals(999_999L * 1_000_000L / 2, sum);
  }
}
