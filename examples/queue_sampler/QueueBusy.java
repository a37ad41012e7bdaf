/* The queue sampler's test fixture: a hot method known by construction,
 * whose samples wait in the queue.
 *
 * A worker thread (started after VMInit, so its queue is registered at
 * ThreadStart) spends `millis` ms of CPU in QueueBusy.hot; the main thread
 * (registered at VMInit) first spends a tenth of that in QueueBusy.cold,
 * then waits. So QueueBusy.hot should be the top frame of about 90% of the
 * CPU samples, as QueueBusy$Worker.run;QueueBusy.spin;QueueBusy.hot.
 *
 * One call of hot is a counted loop of about 20 ms of CPU. Run with
 * -XX:-UseCountedLoopSafepoints, C2 compiles it without a safepoint poll,
 * so profile2 cannot hold the worker for a drain before hot returns: the
 * samples of one call (one per 4 ms scheduler tick) wait in the queue
 * together. A queue of 2 elements overflows and has to grow, and two
 * samples that land on the same instruction of the loop are compressed
 * (same pc, sp and fp). The loop is an xorshift, which C2 cannot shorten
 * (it does fold a linear congruential loop into a few steps). */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class QueueBusy {
    static volatile long sink;

    static long hot(long x) {
        for (int i = 0; i < 10_000_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    static long cold(long x) {
        for (int i = 0; i < 100_000; i++) x = (x ^ (x >>> 7)) * 31 + i;
        return x;
    }

    static final int[] from = new int[16 << 20], to = new int[16 << 20];

    static long copy(long x) {
        System.arraycopy(from, 0, to, 0, from.length);
        return x + to[(int) (x & 1023)];
    }

    /* Runs for `millis` ms of the calling thread's CPU time, not wall time:
     * the samples then do not depend on how loaded the machine is. */
    static final int HOT = 0, COLD = 1, COPY = 2;

    static void spin(long millis, int what) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long end = threads.getCurrentThreadCpuTime() + millis * 1_000_000L, x = 1;
        while (threads.getCurrentThreadCpuTime() < end) x = what == HOT ? hot(x) : what == COLD ? cold(x) : copy(x);
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
            spin(millis, HOT);
            spin(millis / 10, COLD);
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        Worker worker = new Worker(millis);
        worker.start();
        spin(millis / 10, COPY);
        worker.join();
    }
}
