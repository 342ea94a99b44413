import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;

/**
 * Runs nexmark query files on a local Flink MiniCluster (streaming mode, parallelism 1) over the
 * events cmd/nexmark wrote as CSV, and prints one JSON line per query: its wall time and this
 * process's CPU time (the MiniCluster runs inside it), or the error.
 *
 * <p>Arguments: csv directory, queries directory, which events a job reads (all: the kinds of
 * events its query does not name too, into a blackhole, as flightd ingests every kind whichever
 * query runs; named: only those its query names), query names (q0 q1 ...).
 */
public class NexmarkFlink {
  private static final String WATERMARK =
      ", WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND";

  public static void main(String[] args) throws Exception {
    Path csv = Path.of(args[0]).toAbsolutePath();
    Path queries = Path.of(args[1]);
    boolean readAll = switch (args[2]) {
      case "all" -> true;
      case "named" -> false;
      default -> throw new IllegalArgumentException("reads " + args[2] + ": want all or named");
    };
    TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
    env.getConfig().set("parallelism.default", "1");
    env.getConfig().set("taskmanager.numberOfTaskSlots", "1");
    source(env, csv, "person",
        "id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR,"
            + " `dateTime` TIMESTAMP(3), extra VARCHAR" + WATERMARK);
    source(env, csv, "auction",
        "id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,"
            + " `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR"
            + WATERMARK);
    source(env, csv, "bid",
        "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,"
            + " `dateTime` TIMESTAMP(3), extra VARCHAR" + WATERMARK);
    source(env, csv, "side_input", "key BIGINT, `value` VARCHAR");
    for (String kind : KINDS) {
      env.executeSql("CREATE TABLE drain_" + kind + " WITH ('connector' = 'blackhole') LIKE " + kind + " (EXCLUDING ALL)");
    }
    boolean warm = false;
    for (int i = 3; i < args.length; i++) {
      String name = args[i];
      if (!warm) {
        // The JIT's first compilations would be charged to the first query.
        run(env, queries, "q0", readAll, false);
        warm = true;
      }
      run(env, queries, name, readAll, true);
    }
    System.exit(0); // the MiniCluster's threads would keep the JVM alive
  }

  private static void source(TableEnvironment env, Path dir, String name, String columns) {
    env.executeSql("CREATE TABLE " + name + " (" + columns + ") WITH ('connector' = 'filesystem', 'path' = '"
        + dir.resolve(name + ".csv").toUri() + "', 'format' = 'csv')");
  }

  private static final String[] KINDS = {"person", "auction", "bid"};

  /** The source tables the planner scans for insert, from its plan. */
  private static List<String> scanned(TableEnvironment env, String insert) {
    List<String> out = new ArrayList<>();
    Matcher m = Pattern.compile("TableSourceScan\\(table=\\[\\[\\w+, \\w+, (\\w+)").matcher(env.explainSql(insert));
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  private static final Pattern SINK =
      Pattern.compile("(?is)^(CREATE\\s+TABLE\\s+(nexmark_q\\d+)\\s*\\(.*\\))\\s*(PARTITIONED\\s+BY.*|WITH.*)$");
  private static final Pattern SIDE = Pattern.compile("(?is)^CREATE\\s+TABLE\\s+side_input\\b.*");

  private static void run(TableEnvironment env, Path dir, String name, boolean readAll, boolean report) {
    String result;
    try {
      String text = Files.readString(dir.resolve(name + ".sql")).replaceAll("(?m)--.*$", "");
      String insert = null;
      List<String> created = new ArrayList<>();
      for (String st : text.split(";")) {
        st = st.strip();
        if (st.isEmpty() || SIDE.matcher(st).matches()) {
          continue; // the side input is the runner's CSV table
        }
        Matcher m = SINK.matcher(st);
        if (m.matches()) {
          // Every sink is a blackhole (q10's filesystem sink too), so only the query costs.
          env.executeSql("DROP TABLE IF EXISTS " + m.group(2));
          st = m.group(1) + " WITH ('connector' = 'blackhole')";
        }
        if (st.toUpperCase().startsWith("INSERT")) {
          insert = st;
          continue;
        }
        Matcher v = Pattern.compile("(?is)^CREATE\\s+(VIEW|FUNCTION)\\s+(\\w+)").matcher(st);
        if (v.find()) {
          env.executeSql("DROP TEMPORARY " + v.group(1).toUpperCase() + " IF EXISTS " + v.group(2));
          st = st.replaceFirst("(?i)^CREATE\\s+", "CREATE TEMPORARY ");
        }
        env.executeSql(st);
      }
      StatementSet job = env.createStatementSet().addInsertSql(insert);
      List<String> drained = new ArrayList<>();
      if (readAll) {
        // One job, as the query and flightd's ingest of every kind are one run.
        List<String> read = scanned(env, insert);
        if (read.isEmpty()) {
          throw new IllegalStateException("no source table found in the plan of " + name);
        }
        for (String kind : KINDS) {
          if (!read.contains(kind)) {
            job.addInsertSql("INSERT INTO drain_" + kind + " SELECT * FROM " + kind);
            drained.add("\"" + kind + "\"");
          }
        }
      }
      var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      long cpu0 = os.getProcessCpuTime();
      long t0 = System.nanoTime();
      job.execute().await();
      double seconds = (System.nanoTime() - t0) / 1e9;
      double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
      result = String.format("{\"query\":\"%s\",\"seconds\":%.3f,\"cpu_seconds\":%.3f,\"drained\":[%s]}", name,
          seconds, cpu, String.join(",", drained));
    } catch (Throwable e) {
      Throwable root = e;
      while (root.getCause() != null) {
        root = root.getCause();
      }
      String msg = (root.getMessage() == null ? root.toString() : root.getMessage()).split("\n")[0];
      result = String.format("{\"query\":\"%s\",\"error\":\"%s\"}", name,
          msg.replace("\\", "\\\\").replace("\"", "\\\""));
    }
    if (report) {
      System.out.println(result);
      System.out.flush();
    }
  }
}
