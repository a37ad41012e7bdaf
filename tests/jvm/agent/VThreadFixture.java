/* Virtual threads for the agent's test (vthreads_test.py): N of them, each
 * recursing to its own depth (5..44 frames) into a CPU-bound leaf for
 * about SECONDS, yielding now and then so that they move between carriers.
 * Run from source (java VThreadFixture.java N SECONDS): JDK 21 or later.
 * The frames of every sample of a virtual thread are, from the root,
 * Continuation.enter ... VirtualThread.run, lambda$main$0, rec... and leaf
 * (or the clock, or Thread.yield). It prints each virtual thread's id
 * (Thread.threadId(), what the agent's root "[VirtualThread #N]" names)
 * with its depth: a sample in leaf under that root has depth + 1 rec
 * frames. */
import java.util.ArrayList;
import java.util.List;

public class VThreadFixture {
    static volatile long sink;

    static long leaf(long x) {
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long rec(int depth, long x) {
        if (depth == 0) return leaf(x);
        return rec(depth - 1, x + depth) + 1;
    }

    static volatile boolean stop;

    /* Runs until the process has used 1.5 x SECONDS of CPU (two carriers
     * for SECONDS of wall time on an idle 2-CPU machine), at most 10 x
     * SECONDS of wall time: a loaded machine still gives the agent its
     * samples (the wall-clock deadline this had gave 776 in a run beside
     * other tests, where 1,000 are needed). */
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        long seconds = Long.parseLong(args[1]);
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpuUntil = os.getProcessCpuTime() + seconds * 1_500_000_000L;
        long wallUntil = System.nanoTime() + seconds * 10_000_000_000L;
        List<Thread> threads = new ArrayList<>();
        StringBuilder ids = new StringBuilder("virtual threads (id:depth):");
        for (int i = 0; i < n; i++) {
            final int depth = 5 + (i % 40);
            threads.add(Thread.ofVirtual().name("vt-" + i).start(() -> {
                long x = depth;
                /* Every 4th call: the two carriers of a 2-CPU machine take
                 * turns among all the virtual threads (a yield on bits of
                 * x kept the first two mounted until the end). */
                for (int k = 1; !stop; k++) {
                    x = rec(depth, x);
                    if (k % 4 == 0) Thread.yield();
                }
                sink += x;
            }));
            ids.append(' ').append(threads.get(i).threadId()).append(':').append(depth);
        }
        while (os.getProcessCpuTime() < cpuUntil && System.nanoTime() < wallUntil) Thread.sleep(20);
        stop = true;
        for (Thread t : threads) t.join();
        System.out.println(ids);
        System.out.println("fixture done, " + n + " virtual threads");
    }
}
