/* The example sampler's test fixture: a hot method known by construction.
 * A worker thread (started after VMInit, so armed at ThreadStart) spends
 * `millis` ms of CPU in Busy.hot; the main thread (armed at VMInit) first
 * spends a tenth of that in Busy.cold, then waits. So Busy.hot should be the
 * top frame of about 90% of the CPU samples, as
 * Busy$Worker.run;Busy.spin;Busy.hot. */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class Busy {
    static volatile long sink;

    static long hot(long x) {
        for (int i = 0; i < 1_000_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long cold(long x) {
        for (int i = 0; i < 100_000; i++) x = (x ^ (x >>> 7)) * 31 + i;
        return x;
    }

    /* Runs for `millis` ms of the calling thread's CPU time, not wall time:
     * the samples then do not depend on how loaded the machine is. */
    static void spin(long millis, boolean hot) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long end = threads.getCurrentThreadCpuTime() + millis * 1_000_000L, x = 1;
        while (threads.getCurrentThreadCpuTime() < end) x = hot ? hot(x) : cold(x);
        sink = x;
    }

    static class Worker extends Thread {
        final long millis;

        Worker(long millis) {
            super("worker");
            this.millis = millis;
        }

        @Override
        public void run() {
            spin(millis, true);
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        Worker worker = new Worker(millis);
        worker.start();
        spin(millis / 10, false);
        worker.join();
    }
}
