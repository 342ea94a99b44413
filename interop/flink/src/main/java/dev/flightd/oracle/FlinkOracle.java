package dev.flightd.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import java.util.stream.Stream;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.client.deployment.executors.PipelineExecutorUtils;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.PipelineExecutor;
import org.apache.flink.core.execution.PipelineExecutorFactory;
import org.apache.flink.core.execution.PipelineExecutorServiceLoader;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

/**
 * Reads one SQL statement per line from stdin, runs it in Flink's batch mode (parallelism 1,
 * session time zone UTC, one MiniCluster for the process) and answers on stdout with a line
 * per result row ("ROW" and the values, tab-separated, NULL as \N, tabs, newlines and
 * backslashes escaped, arrays as JSON) after a "TYPES" line with the columns' Flink types, then
 * "OK", or "ERR" and the innermost cause's message; every answer ends with "END".
 */
public final class FlinkOracle {
  public static void main(String[] args) {
    try {
      serve();
    } catch (Throwable e) {
      // The cluster's threads would keep the JVM up: the driver must see the end.
      e.printStackTrace();
      System.exit(1);
    }
    System.exit(0);
  }

  private static void serve() throws Exception {
    // One MiniCluster for every statement, jobs handed to it in-process: Flink's local
    // executor starts a cluster per job, which costs seconds a query.
    // Any free port for its REST endpoint: oracles may run side by side.
    Configuration clusterConf = new Configuration();
    clusterConf.set(RestOptions.BIND_PORT, "0");
    MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
        .setConfiguration(clusterConf).setNumTaskManagers(1).setNumSlotsPerTaskManager(1).build());
    cluster.start();
    PipelineExecutor executor = (pipeline, conf, classLoader) ->
        cluster.submitJob(PipelineExecutorUtils.getStreamGraph(pipeline, conf)).thenApply(r ->
            new MiniClusterJobClient(r.getJobID(), cluster, classLoader, MiniClusterJobClient.JobFinalizationBehavior.NOTHING));
    PipelineExecutorServiceLoader executors = new PipelineExecutorServiceLoader() {
      @Override
      public PipelineExecutorFactory getExecutorFactory(Configuration conf) {
        return new PipelineExecutorFactory() {
          @Override
          public String getName() {
            return "flightd-minicluster";
          }

          @Override
          public boolean isCompatibleWith(Configuration c) {
            return true;
          }

          @Override
          public PipelineExecutor getExecutor(Configuration c) {
            return executor;
          }
        };
      }

      @Override
      public Stream<String> getExecutorNames() {
        return Stream.of("flightd-minicluster");
      }
    };
    Configuration conf = new Configuration();
    conf.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.BATCH);
    conf.set(DeploymentOptions.TARGET, "flightd-minicluster");
    StreamExecutionEnvironment sEnv = new StreamExecutionEnvironment(executors, conf, FlinkOracle.class.getClassLoader());
    TableEnvironment env = StreamTableEnvironment.create(sEnv, EnvironmentSettings.inBatchMode());
    env.getConfig().set("parallelism.default", "1");
    env.getConfig().set("table.local-time-zone", "UTC");
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String sql; (sql = in.readLine()) != null; ) {
      try {
        TableResult r = env.executeSql(sql);
        if (r.getJobClient().isPresent() && sql.trim().toUpperCase().startsWith("INSERT")) {
          r.await(); // its one row, the -1 "affected rows", is not an answer
          out.println("OK");
          out.println("END");
          continue;
        }
        StringBuilder types = new StringBuilder("TYPES");
        for (DataType t : r.getResolvedSchema().getColumnDataTypes()) {
          types.append('\t').append(escape(t.getLogicalType().asSummaryString()));
        }
        out.println(types);
        try (CloseableIterator<Row> it = r.collect()) {
          while (it.hasNext()) {
            Row row = it.next();
            StringBuilder sb = new StringBuilder("ROW");
            for (int i = 0; i < row.getArity(); i++) {
              sb.append('\t').append(escape(row.getField(i)));
            }
            out.println(sb);
          }
        }
        out.println("OK");
      } catch (Throwable e) {
        Throwable c = e;
        while (c.getCause() != null) {
          c = c.getCause();
        }
        out.println("ERR " + escape(c.getClass().getSimpleName() + ": " + c.getMessage()));
      }
      out.println("END");
    }
  }

  private static String escape(Object v) {
    if (v == null) {
      return "\\N";
    }
    String s = v instanceof byte[] ? hex((byte[]) v) : v instanceof Object[] ? json(v) : String.valueOf(v);
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n");
  }

  /** json renders an ARRAY as the .slt files print one: ["a",null,"b"], [1,2]. */
  private static String json(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Object[]) {
      StringBuilder sb = new StringBuilder("[");
      for (Object e : (Object[]) v) {
        sb.append(sb.length() > 1 ? "," : "").append(json(e));
      }
      return sb.append(']').toString();
    }
    if (v instanceof String) {
      return '"' + ((String) v).replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
    return String.valueOf(v);
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02X", x));
    }
    return sb.toString();
  }
}
