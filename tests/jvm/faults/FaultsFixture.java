/* The target of the fault and attach-cycle tests (faults_test.py,
 * attach_cycles.py): THREADS threads busy in Java (spinInFaultsFixture,
 * with some allocation so that GC runs too) and one sleeping, until
 * standard input is closed; a test attaches, dumps and stops for as long as
 * its steps take.
 *
 *   java FaultsFixture [THREADS]      (default 3)
 *
 * Prints "ready" once every worker has run, and "done" at the end. */
import java.util.concurrent.CountDownLatch;

public class FaultsFixture {
  static volatile boolean stop;
  static volatile long sink;

  static long spinInFaultsFixture(long n) {
    long h = n;
    for (int i = 0; i < 100_000; i++) {
      h = h * 6364136223846793005L + 1442695040888963407L;
      h ^= h >>> 29;
    }
    return h;
  }

  public static void main(String[] args) throws Exception {
    int threads = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    CountDownLatch started = new CountDownLatch(threads);
    Thread[] workers = new Thread[threads + 1];
    for (int t = 0; t < threads; t++) {
      workers[t] = new Thread(() -> {
        long n = 0;
        started.countDown();
        while (!stop) {
          sink += spinInFaultsFixture(n++);
          if ((n & 63) == 0) sink += new long[256].length; // some garbage for the GC
        }
      }, "faults-worker-" + t);
      workers[t].start();
    }
    workers[threads] = new Thread(() -> {
      while (!stop) {
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "faults-sleeper");
    workers[threads].start();
    started.await();
    System.out.println("ready");
    System.out.flush();
    while (System.in.read() >= 0) {
    }
    stop = true;
    for (Thread w : workers) w.join();
    System.out.println("done");
    System.out.flush();
  }
}
