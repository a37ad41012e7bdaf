// A server-like JVM for attach_threads_test.py: every thread it has exists
// before the profiler attaches, and stays alive until stdin closes.
//
//   busy-N     computing all the time (the load: more runnable threads than
//              the CPUs of a 2-core machine, so the wall sampler and the
//              handlers compete for CPU)
//   pool-N     a fixed executor's workers: idle on its queue (LinkedBlockingQueue
//              take, i.e. park) between requests; the feeder submits one
//              (0.3 ms of computation) every millisecond, like requests arriving
//   sleep-N    Thread.sleep, an hour at a time
//   wait-N     Object.wait, without a timeout, on a monitor nobody notifies
//   blocked-N  blocked entering a monitor the holder thread keeps
//   holder     holds that monitor, sleeping inside it
//   feeder     submits the requests
//
// The sleepers and waiters never wake during a session (the threads are
// daemons: the JVM ends without them). With timeouts that expired during
// a session (50 ms, 500 ms), a VM that stood still for 2.8 s of a 5.4 s wall
// session woke them all at once on its 2 CPUs, and the signal that carried
// the pause's intervals found sleep-2 out of its sleep (in JVM_SleepNanos):
// 3,328 of its 5,380 intervals were not [sleeping] (docs/testing.md,
// "Threads that exist before an attach").
//
// Thread names are short (Linux keeps 15 characters of a thread's name as
// its comm, which the test uses to find the threads in /proc). Prints
// "ready" when every thread runs, then the names it started, one line.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

public class ServerFixture {
  static volatile boolean stop;
  static volatile long sink;
  static final Object never = new Object();
  static final Object held = new Object();

  static long compute(long n) {
    long x = n;
    for (int i = 0; i < 20_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
  }

  static void busy() {
    long x = 0;
    while (!stop) x += compute(x);
    sink = x;
  }

  static void sleeper() {
    while (!stop) {
      try {
        Thread.sleep(3_600_000);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  static void waiter() {
    synchronized (never) {
      while (!stop) {
        try {
          never.wait();
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  static void holder() {
    synchronized (held) {
      while (!stop) {
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  static void blocked() {
    synchronized (held) {
      sink++;
    }
  }

  static Thread start(List<Thread> all, String name, Runnable r) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
    all.add(t);
    return t;
  }

  public static void main(String[] args) throws Exception {
    int busy = Integer.parseInt(args.length > 0 ? args[0] : "3");
    int pool = Integer.parseInt(args.length > 1 ? args[1] : "8");
    int others = Integer.parseInt(args.length > 2 ? args[2] : "4");
    List<Thread> all = new ArrayList<>();
    for (int i = 0; i < busy; i++) start(all, "busy-" + i, ServerFixture::busy);
    for (int i = 0; i < others; i++) start(all, "sleep-" + i, ServerFixture::sleeper);
    for (int i = 0; i < others; i++) start(all, "wait-" + i, ServerFixture::waiter);
    Thread h = start(all, "holder", ServerFixture::holder);
    while (h.getState() != Thread.State.TIMED_WAITING) Thread.sleep(1);
    for (int i = 0; i < others; i++) start(all, "blocked-" + i, ServerFixture::blocked);

    AtomicInteger n = new AtomicInteger();
    ThreadFactory tf = r -> {
      Thread t = new Thread(r, "pool-" + n.getAndIncrement());
      t.setDaemon(true);
      return t;
    };
    ThreadPoolExecutor ex = new ThreadPoolExecutor(pool, pool, 1, TimeUnit.HOURS, new LinkedBlockingQueue<>(), tf);
    ex.prestartAllCoreThreads(); // the workers exist now, not at the first request
    start(all, "feeder", () -> {
      long k = 0;
      while (!stop) {
        final long v = k++;
        ex.execute(() -> { // a request: 0.3 ms of computation (by the clock: JITs differ)
          long x = v, end = System.nanoTime() + 300_000;
          while (System.nanoTime() < end) x += compute(x);
          sink += x;
        });
        try {
          Thread.sleep(1);
        } catch (InterruptedException e) {
          return;
        }
      }
    });
    // Every thread in the state it is meant to be in before "ready".
    for (Thread t : all) {
      Thread.State want = t.getName().startsWith("blocked") ? Thread.State.BLOCKED : null;
      while (want != null && t.getState() != want) Thread.sleep(1);
    }
    while (ex.getPoolSize() < pool) Thread.sleep(1);
    StringBuilder names = new StringBuilder();
    for (Thread t : all) names.append(t.getName()).append(' ');
    for (int i = 0; i < pool; i++) names.append("pool-").append(i).append(' ');
    System.out.println("ready");
    System.out.println(names.toString().trim());
    System.out.flush();
    while (System.in.read() >= 0) {
    }
    stop = true;
    ex.shutdownNow();
    System.out.println("fixture done");
  }
}
