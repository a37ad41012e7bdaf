// Two threads spin in hotLoop() until each has used the given number of
// seconds of CPU time (at most 15x that in wall time) while main waits;
// with "wait-for-attach", main first prints "ready" and waits for a line on
// stdin (the test driver sends it after jcmd JVMTI.agent_load).
//
// CPU time, not wall time: the agents sample on ITIMER_PROF, so the number
// of samples follows the CPU the fixture gets. Spinning for a wall-clock
// time, a run on a machine loaded by parallel tests got 59 walks where the
// checks need 100 (an idle machine gives 250-740).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class AsgstOnlyFixture {
  static volatile double sink;

  static double hotLoop(long cpuNanos, long wallUntil) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long cpuUntil = mx.getCurrentThreadCpuTime() + cpuNanos;
    double x = 0;
    while (mx.getCurrentThreadCpuTime() < cpuUntil && System.nanoTime() < wallUntil) {
      for (int i = 1; i < 100_000; i++) x += (double) (i ^ (i >> 3)) / i;
    }
    return x;
  }

  public static void main(String[] args) throws Exception {
    double seconds = Double.parseDouble(args[0]);
    if (args.length > 1 && args[1].equals("wait-for-attach")) {
      System.out.println("ready");
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in)).readLine();
    }
    long cpu = (long) (seconds * 1e9);
    long wallUntil = System.nanoTime() + (long) (seconds * 15 * 1e9);
    Thread[] workers = new Thread[2];
    for (int t = 0; t < workers.length; t++) {
      workers[t] = new Thread(() -> sink += hotLoop(cpu, wallUntil), "worker-" + t);
      workers[t].start();
    }
    for (Thread w : workers) w.join();
    System.out.println("done");
  }
}
