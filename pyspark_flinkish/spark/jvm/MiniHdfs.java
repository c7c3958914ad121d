import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS for tests: Hadoop's MiniDFSCluster with one NameNode and one DataNode, every port on 127.0.0.1, WebHDFS on,
 * permissions off, replication 1. Started by pyspark_flinkish.testing.hdfs (compiled by pyspark_flinkish.spark.jars into
 * .jars/hdfs/classes/ against the jars of hdfs-minicluster-pom.xml).
 *
 * <p>Options: {@code --base DIR} (required: the cluster's storage is DIR/data), {@code --ready FILE} (required: written, atomically,
 * once the cluster is up and has taken a first file, as {@code key=value} lines: rpc.port, http.port, datanode.port,
 * startup.seconds), {@code --port N} and {@code --http-port N} (the NameNode's RPC and HTTP ports; 0, the default, picks free
 * ones), {@code --no-format} (keep the storage of an earlier run), {@code --conf key=value} (any Hadoop setting, repeatable) and
 * {@code --exit-on-stdin-eof} (shut the cluster down when standard input closes, i.e. when the process that started this one
 * died). SIGTERM shuts the cluster down as well.
 */
public final class MiniHdfs {
  private MiniHdfs() {}

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    String base = null;
    String ready = null;
    int port = 0;
    int httpPort = 0;
    boolean format = true;
    boolean exitOnEof = false;
    List<String[]> extra = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--base": base = args[++i]; break;
        case "--ready": ready = args[++i]; break;
        case "--port": port = Integer.parseInt(args[++i]); break;
        case "--http-port": httpPort = Integer.parseInt(args[++i]); break;
        case "--no-format": format = false; break;
        case "--exit-on-stdin-eof": exitOnEof = true; break;
        case "--conf": {
          String kv = args[++i];
          int eq = kv.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--conf expects key=value, got " + kv);
          }
          extra.add(new String[] {kv.substring(0, eq), kv.substring(eq + 1)});
          break;
        }
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (base == null || ready == null) {
      throw new IllegalArgumentException("usage: MiniHdfs --base DIR --ready FILE [--port N] [--http-port N] [--no-format] "
          + "[--conf key=value]... [--exit-on-stdin-eof]");
    }

    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base);
    conf.set("hadoop.tmp.dir", new File(base, "tmp").getAbsolutePath());
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.setBoolean("dfs.permissions.enabled", false);
    conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
    conf.set("dfs.namenode.http-bind-host", "127.0.0.1");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.setInt("dfs.replication", 1);
    conf.setBoolean("dfs.client.use.datanode.hostname", false);
    for (String[] kv : extra) {
      conf.set(kv[0], kv[1]);
    }

    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
        .numDataNodes(1)
        .nameNodePort(port)
        .nameNodeHttpPort(httpPort)
        .format(format)
        .manageNameDfsDirs(true)
        .manageDataDfsDirs(true)
        .build();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown, "minihdfs-shutdown"));
    cluster.waitActive();

    // The NameNode answers and the DataNode takes blocks: a first file, written, closed and deleted.
    FileSystem fs = cluster.getFileSystem();
    org.apache.hadoop.fs.Path probe = new org.apache.hadoop.fs.Path("/.minihdfs-probe");
    try (FSDataOutputStream out = fs.create(probe, true)) {
      out.write(1);
    }
    fs.delete(probe, false);

    double seconds = (System.nanoTime() - t0) / 1e9;
    String info = "rpc.port=" + cluster.getNameNodePort() + "\n"
        + "http.port=" + cluster.getNameNode().getHttpAddress().getPort() + "\n"
        + "datanode.port=" + cluster.getDataNodes().get(0).getXferPort() + "\n"
        + "startup.seconds=" + seconds + "\n";
    Path target = Paths.get(ready);
    Path tmp = Paths.get(ready + ".tmp");
    Files.write(tmp, info.getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    System.out.println("MiniHdfs READY\n" + info);
    System.out.flush();

    if (exitOnEof) {
      InputStream in = System.in;
      try {
        while (in.read() != -1) {
          // the parent never writes: wait for the end of the stream
        }
      } catch (IOException e) {
        // a broken pipe means the parent is gone, like the end of the stream
      }
      System.out.println("MiniHdfs: standard input closed, shutting down");
      System.exit(0);  // runs the shutdown hook
    }
    Thread.currentThread().join();
  }
}
