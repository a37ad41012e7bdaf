/* The JVM of the launch tests (launch_test.py): started through launcher
 * scripts, or starting processes itself.
 *
 *   java LaunchFixture MILLIS STATUS [CHILDREN]
 *
 * Prints "pid N", burns CPU in burnInLaunchFixture for MILLIS ms of the main
 * thread's CPU time (not wall time: on a loaded machine the profile still
 * gets its samples), and with
 * CHILDREN > 0 starts that many processes meanwhile through ProcessBuilder
 * (the JDK's posix_spawn of jspawnhelper, which execs the command):
 * /bin/true and `sh -c` with a command substitution, alternately, and last
 * `java -version` (a JVM below a profiled one), printing each one's output
 * (joined into one line) and status. Then prints "done" and exits with STATUS. */
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class LaunchFixture {
  static volatile long sink;

  static long burnInLaunchFixture(long n) {
    long h = n;
    for (int i = 0; i < 100_000; i++) {
      h = h * 6364136223846793005L + 1442695040888963407L;
      h ^= h >>> 29;
    }
    return h;
  }

  static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  static void burn(long millis) {
    long end = THREADS.getCurrentThreadCpuTime() + millis * 1_000_000L;
    long n = 0;
    while (THREADS.getCurrentThreadCpuTime() < end) sink += burnInLaunchFixture(n++);
  }

  static void startChild(int i, boolean last) throws Exception {
    String java = System.getProperty("java.home") + "/bin/java";
    ProcessBuilder pb = last         ? new ProcessBuilder(java, "-Xshare:auto", "-version")
                        : i % 2 == 0 ? new ProcessBuilder("/bin/true")
                                     : new ProcessBuilder("sh", "-c", "u=$(uname); echo child $u " + i);
    pb.redirectErrorStream(true);
    Process p = pb.start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = p.getInputStream()) {
      in.transferTo(out);
    }
    int status = p.waitFor();
    String text = out.toString().trim().replace('\n', ' ');
    System.out.println("child " + i + " exited " + status + (text.isEmpty() ? "" : ": " + text));
  }

  public static void main(String[] args) throws Exception {
    long millis = Long.parseLong(args[0]);
    int status = Integer.parseInt(args[1]);
    int children = args.length > 2 ? Integer.parseInt(args[2]) : 0;
    System.out.println("pid " + ProcessHandle.current().pid());
    System.out.flush();
    for (int i = 0; i < children; i++) {
      burn(millis / (children + 1));
      startChild(i, i == children - 1);
    }
    burn(children > 0 ? millis / (children + 1) : millis);
    System.out.println("done " + (sink & 1));
    System.out.flush();
    System.exit(status);
  }
}
