// Deep stacks for the agent's incremental walks (deep_stacks_test.py): two
// threads each recurse DEPTH frames deep (through two methods, so that the
// frames alternate) and spin at the top in leaf methods that change from one
// signal to the next, so that each sample's bottom is the previous one's.
// Every few milliseconds a thread climbs back a few frames (5 and 16) and
// descends again. Runs until each thread has used SECONDS of CPU, then
// prints "done".
// usage: java DeepFixture.java DEPTH SECONDS
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class DeepFixture {
  static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
  static volatile long sink;

  static long leafA(long x) {
    for (int i = 0; i < 200; i++) x = x * 31 + i;
    return x;
  }

  static long leafB(long x) {
    for (int i = 0; i < 300; i++) x ^= x << 7 | i;
    return x;
  }

  // Spins at the top for about a millisecond of calls, then returns.
  static long spin(long x) {
    for (int i = 0; i < 2000; i++) x = (i & 1) == 0 ? leafA(x) : leafB(x);
    return x;
  }

  // d frames to go down. At `loop` frames above the top, a frame keeps
  // descending again while CPU time is left, so the frames below it stay and
  // the few above it are rebuilt between samples.
  static long down(int d, long cpuEnd, int loop) {
    if (d == 0) return top();
    if (d == loop) {
      long s = 0;
      while (MX.getCurrentThreadCpuTime() < cpuEnd) s += step(d, cpuEnd, loop);
      return s;
    }
    return step(d, cpuEnd, loop);
  }

  static long step(int d, long cpuEnd, int loop) {
    return (d & 1) == 0 ? evenDown(d, cpuEnd, loop) : oddDown(d, cpuEnd, loop);
  }

  static long evenDown(int d, long cpuEnd, int loop) {
    return down(d - 1, cpuEnd, loop) + 1;
  }

  static long oddDown(int d, long cpuEnd, int loop) {
    return down(d - 1, cpuEnd, loop) + 2;
  }

  // The top of the recursion: spin for some milliseconds, then climb back.
  static long top() {
    long x = 1;
    for (int r = 0; r < 20; r++) x += spin(x);
    return x;
  }

  static void worker(int depth, int loop, long cpuNs) {
    long cpuEnd = MX.getCurrentThreadCpuTime() + cpuNs;
    sink += down(depth, cpuEnd, loop);
  }

  public static void main(String[] args) throws Exception {
    int depth = Integer.parseInt(args[0]);
    long cpuNs = (long) (Double.parseDouble(args[1]) * 1e9);
    Thread[] ts = new Thread[2];
    for (int i = 0; i < ts.length; i++) {
      int d = depth + 37 * i, loop = 5 + 11 * i;
      ts[i] = new Thread(() -> worker(d, loop, cpuNs), "deep-" + i);
      ts[i].start();
    }
    for (Thread t : ts) t.join();
    System.out.println("done " + sink);
  }
}
