import java.util.concurrent.CountDownLatch;

/**
 * The scaling study's program (bench/overhead.sh, WORKLOADS=scale-*): a
 * fixed amount of work split evenly over THREADS threads, each of which
 * first recurses DEPTH Java frames deep and does its share at the bottom.
 * The total work does not depend on the thread count, so the unprofiled
 * run takes about as long with 1 or 512 threads on the same CPUs, and the
 * profiled / unprofiled ratio shows what each thread or frame adds.
 *
 *   java Scaling THREADS DEPTH UNITS
 *
 * Prints one checksum line, the same for every run with the same UNITS.
 */
public final class Scaling {
  /** One unit: ~0.1 ms of integer work that the JIT cannot fold away. */
  static long unit(long seed) {
    long x = seed | 1;
    for (int i = 0; i < 50_000; i++) {
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
    }
    return x;
  }

  static long work(int first, int count) {
    long sum = 0;
    for (int u = first; u < first + count; u++) sum += unit(u);
    return sum;
  }

  /** DEPTH frames of this method above work(): not a tail call, so the
   *  frames stay (C2 may inline a level or two; the physical depth is
   *  what the walker sees either way). */
  static long descend(int depth, int first, int count) {
    if (depth <= 1) return work(first, count);
    return descend(depth - 1, first, count) + 1;
  }

  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]);
    int depth = Integer.parseInt(args[1]);
    int units = Integer.parseInt(args[2]);
    long[] sums = new long[threads];
    CountDownLatch start = new CountDownLatch(1);
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      final int id = t;
      int first = (int) ((long) units * t / threads);
      int count = (int) ((long) units * (t + 1) / threads) - first;
      // The recursion's frames are counted from the thread's own bottom
      // frames (Thread.run, the lambda), DEPTH - 4 of descend, then work and
      // unit: DEPTH in all (JDK 25 adds Thread.runWith).
      ts[t] = new Thread(() -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          throw new RuntimeException(e);
        }
        sums[id] = descend(Math.max(1, depth - 4), first, count) - Math.max(1, depth - 4) + 1;
      }, "worker-" + t);
      ts[t].start();
    }
    start.countDown();
    long total = 0;
    for (int t = 0; t < threads; t++) {
      ts[t].join();
      total += sums[t];
    }
    System.out.println("checksum " + total);
  }
}
