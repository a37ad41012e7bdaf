/* A program whose profile is known by construction, for the agent's tests
 * (agent_test.py).
 *
 * Thread "worker" repeats slices of its own CPU time: 3u ms spinning in hotA,
 * then u ms in coldB, u drawn anew for each slice between 3.4 and 6.8 ms (mean
 * 5.1), so a CPU profile has hotA in 75 % of the worker's samples and coldB in
 * 25 %. The slices vary so that no sampling period is commensurate with them:
 * with a fixed 20.4 ms slice, a timer that fell behind to one signal per
 * ~13.6 ms (each carrying its overrun) sampled only three phases, all in
 * hotA, and the share came out at 90 %. The slices are measured in the
 * thread's CPU time, not in wall time: on a loaded machine a wall-time slice
 * holds whatever CPU the scheduler gave it (shares of 48 % and 89 % were seen
 * with other builds running), a CPU-time slice always holds its length. Thread "sleeper" sleeps 5 ms at a time: a wall-clock
 * profile has it as [sleeping] about as often as the worker is sampled; a
 * CPU profile has it (almost) never. The lines marked HOT-LINE / COLD-LINE
 * are where the samples of hotA / coldB fall (the test reads the markers).
 *
 *   java AgentFixture SECONDS [WORKER_CPU_SECONDS]
 *        prints "ready" once both threads run; SECONDS 0: run until stdin is
 *        closed. With WORKER_CPU_SECONDS, the run ends when the worker has
 *        used that much CPU time instead (however loaded the machine), and
 *        the worker's CPU time is printed at the end ("worker cpu ns N"):
 *        the timer-fallback test compares its samples' weight with it.
 *        Always printed at the end: "lifetimes ns: worker N sleeper M", the
 *        wall time each thread ran its loop (the wall-clock test compares
 *        each thread's weight with it: on a machine loaded far past its
 *        CPUs the worker's last slice alone took seconds after the sleeper
 *        had stopped).
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class AgentFixture {
    static volatile long sink;
    static volatile boolean stop;

    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /* The calling thread's CPU time (clock_gettime of its CPU clock). */
    static long cpuNanos() {
        return THREADS.getCurrentThreadCpuTime();
    }

    /* The clock is read about every CHUNK_NS of CPU time, so that the
     * samples fall on the marked lines rather than in the clock: read every
     * 65536 steps of C2's code (~85 us) the clock took 2.1-2.7 % of hotA's
     * samples on a VM where a system call costs ~1 us (the thread CPU clock
     * is one). At ~0.3 ms it takes ~1 %.
     *
     * The number of steps between two reads follows the pace of the loop's
     * last chunk, because that pace changes 20-fold as the JIT works: a fixed
     * 2^18 steps took 0.35 ms in C2's code, 0.9 ms in C1's profiled code and
     * 6-9 ms in the interpreter. A slice could then overrun its end by a
     * whole chunk: run with -Xint, hotA truly got 79.9 % of the CPU time
     * (coldB's slice ends at t + 4u, so hotA's overrun is taken from it);
     * and on a loaded machine, where the compiler threads are starved and
     * the worker stays in slow code longer, the profile of one CI run under
     * ASan had hotA at 63.8 %. Each chunk also stops at the slice's end, so
     * a slice ends within a block of it whatever code runs it. Only a
     * whole chunk sets the pace: in a short one the clock's own ~1-2 us
     * would look like slow steps. */
    static final long CHUNK_NS = 300_000;
    /* The steps run in blocks of BLOCK, a constant trip count, so that the
     * inner loop is compiled as the fixed 2^18 steps were; a chunk is a
     * whole number of blocks. The part of hotA's samples on the inner `for`
     * line (HOT-LOOP), where C2 puts the loop's control, varies with the
     * compilation: 0.2-10.6 % in 48 runs on JDK 17 and 25, and the HOT-LINE
     * itself had 87.4-99.3 % in 72 (a trip count read from a variable put
     * 11.5 % on the `for` line in its first run); agent_test.py allows for
     * it. A block is ~5 us of C2's code, ~0.12 ms of the interpreter's. */
    static final int BLOCK = 4096;
    /* CPU ns per block in each loop's last chunk. The first guess is the
     * interpreter's pace (~30 ns a step): a first chunk too short costs one
     * more read of the clock, one too long overruns its slice. */
    static long hotPace = 30 * BLOCK, coldPace = 30 * BLOCK;

    /* Blocks that take ns at pace (CPU ns per block); at least one. */
    static int blocks(long ns, long pace) {
        return (int) Math.max(1, Math.min(ns / pace, 1024));
    }

    static long hotA(long x, long until) {
        long now = cpuNanos();
        while (now < until) {
            boolean whole = until - now >= CHUNK_NS;
            int n = blocks(whole ? CHUNK_NS : until - now, hotPace);
            for (int k = 0; k < n; k++) {
                for (int i = 0; i < BLOCK; i++) { // HOT-LOOP
                    x = x * 6364136223846793005L + (x >>> 17); // HOT-LINE
                }
            }
            long then = cpuNanos();
            if (whole) {
                hotPace = Math.max(1, (then - now) / n);
            }
            now = then;
        }
        return x;
    }

    static long coldB(long x, long until) {
        long now = cpuNanos();
        while (now < until) {
            boolean whole = until - now >= CHUNK_NS;
            int n = blocks(whole ? CHUNK_NS : until - now, coldPace);
            for (int k = 0; k < n; k++) {
                for (int i = 0; i < BLOCK; i++) {
                    x = (x ^ (x >>> 29)) * 0xbf58476d1ce4e5b9L; // COLD-LINE
                }
            }
            long then = cpuNanos();
            if (whole) {
                coldPace = Math.max(1, (then - now) / n);
            }
            now = then;
        }
        return x;
    }

    static volatile long workerCpuLimit = Long.MAX_VALUE;
    static volatile long workerCpu;
    static volatile long workerLived, sleeperLived;

    static void worker() {
        long born = System.nanoTime();
        long x = 1;
        /* A fixed seed: every run draws the same slices. */
        java.util.SplittableRandom slices = new java.util.SplittableRandom(20_400L);
        while (!stop && cpuNanos() < workerCpuLimit) {
            long t = cpuNanos();
            long u = slices.nextLong(3_400_000L, 6_800_001L);
            x = hotA(x, t + 3 * u);
            x = coldB(x, t + 4 * u);
        }
        sink = x;
        workerCpu = cpuNanos();
        workerLived = System.nanoTime() - born;
    }

    static void sleeper() {
        long born = System.nanoTime();
        while (!stop) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                break;
            }
        }
        sleeperLived = System.nanoTime() - born;
    }

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        boolean byCpu = args.length > 1;
        if (byCpu) {
            workerCpuLimit = (long) (Double.parseDouble(args[1]) * 1e9);
        }
        Thread w = new Thread(AgentFixture::worker, "worker");
        Thread s = new Thread(AgentFixture::sleeper, "sleeper");
        w.start();
        s.start();
        System.out.println("ready");
        System.out.flush();
        if (byCpu) {
            w.join();
        } else if (seconds > 0) {
            Thread.sleep(seconds * 1000);
        } else {
            while (System.in.read() >= 0) {
                /* until the driver closes stdin */
            }
        }
        stop = true;
        w.join();
        s.join();
        if (byCpu) {
            System.out.println("worker cpu ns " + workerCpu);
        }
        System.out.println("lifetimes ns: worker " + workerLived + " sleeper " + sleeperLived);
        System.out.println("fixture done");
    }
}
