/* The queue sampler's test fixture: a hot method known by construction,
 * whose samples wait in the queue.
 *
 * A worker thread (started after VMInit, so its queue is registered at
 * ThreadStart) spends `millis` ms of CPU in QueueBusy.hot, then a tenth of
 * that in QueueBusy.cold; the main thread (registered at VMInit) spends a
 * tenth of it in QueueBusy.copy, then waits. So QueueBusy.hot should be the
 * top frame of about 80% of the CPU samples, as QueueBusy$Worker.run, DEPTH + 1 frames of QueueBusy.spin,
 * QueueBusy.hot.
 *
 * The worker's spin recurses DEPTH frames deep before it loops, deeper
 * than the 16 frames below the top one that profile2 captures by default:
 * a drain then needs the thread's live stack and has to hold the thread (a
 * capture that reaches the bottom of the stack is whole, and its drain
 * leaves the thread running, as the main thread's shallow stack lets it).
 * The test keeps spin interpreted, so that each of its frames is a
 * physical one whose code never changes, and the loop runs in the deepest
 * of them, so that all of them stay live while samples wait.
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
    static final int DEPTH = 24;

    static void spin(int depth, long millis, int what) {
        if (depth > 0) {
            spin(depth - 1, millis, what);
            return;
        }
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
            spin(DEPTH, millis, HOT);
            spin(DEPTH, millis / 10, COLD);
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        Worker worker = new Worker(millis);
        worker.start();
        spin(0, millis / 10, COPY);
        worker.join();
    }
}
