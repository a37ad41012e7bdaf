/* Threads running a CPU-bound call graph (compiled, inlined, interpreted
 * frames, recursion of varying depth) while the queue agent samples them
 * with ASGST_Enqueue. Each phase is driven by the agent's report of what it
 * has checked; see queue_agent.c. */
public class QueueFixture {
    static native boolean done();
    static native int report(boolean knownSplit);
    static native void checkStillSuspended(Thread t);
    static native void registerFor(Thread t);

    static volatile long sink;

    static long leaf(long x) {
        for (int i = 0; i < 300; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static double leafD(double d) {
        for (int i = 0; i < 100; i++) d = Math.sqrt(d + i) * 1.0001;
        return d;
    }

    static long mid(long x) {
        return leaf(x) ^ (long) leafD(x & 1023);
    }

    static long rec(int n, long x) {
        if (n == 0) return mid(x);
        return rec(n - 1, x + n) + 1;
    }

    static long interp(long x) {
        /* big enough never to be compiled within the run: excluded with CompileCommand */
        for (int i = 0; i < 50; i++) x += i * x;
        return x;
    }

    /* Set once the suspension of worker-2 has been checked: until then no
     * worker ends, however soon the sampling finishes (on a loaded machine
     * it once finished first, and the checks found worker-2 terminated). */
    static volatile boolean suspensionChecked;

    static void work() {
        long x = 1;
        for (int round = 0; (round & 31) != 0 || !done() || !suspensionChecked; round++) {
            x += mid(x);
            x += rec(round % 24, x);
            x += interp(x);
            if ((round & 1023) == 0) x += new int[(int) (x & 1023) + 1].length;
        }
        sink = x;
    }

    /* Short-lived threads: their queues are deregistered at ThreadEnd with
     * elements still in them. */
    static void shortLived() throws Exception {
        for (int i = 0; i < 200 && !done(); i++) {
            Thread t = new Thread(() -> {
                long y = 1;
                for (int k = 0; k < 20000; k++) y += rec(k % 8, y);
                sink = y;
            }, "short-" + i);
            t.start();
            t.join();
        }
    }

    static void suspendAndCheck(Thread t) throws Exception {
        try {
            suspendAndCheckOnce(t);
        } finally {
            suspensionChecked = true;
        }
    }

    @SuppressWarnings("removal")
    static void suspendAndCheckOnce(Thread t) throws Exception {
        /* JDK 20 made Thread.suspend throw and JDK 23 removed it; with
         * can_suspend held by profile2 (a solo capability) nobody else can
         * suspend a thread there, so the case exists on JDK 17 only. */
        java.lang.reflect.Method suspend;
        try {
            suspend = Thread.class.getMethod("suspend");
        } catch (NoSuchMethodException e) {
            System.out.println("fixture: this JDK has no Thread.suspend; the suspended-by-the-program case does not arise");
            return;
        }
        try {
            suspend.invoke(t);
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (e.getCause() instanceof UnsupportedOperationException) {
                System.out.println("fixture: Thread.suspend is not supported on this JDK; the suspended-by-the-program case does not arise");
                return;
            }
            throw e;
        }
        for (int i = 0; i < 10; i++) {
            Thread.sleep(50);
            checkStillSuspended(t);
        }
        Thread.class.getMethod("resume").invoke(t);
    }

    /* callgraph mode: a call graph whose split is known by construction.
     * Each step calls leafA (via a1, a2) three times for one leafB (via
     * b1), all with the same work; kept out of line so that the physical
     * frames come and go as they would in code too big to inline. */
    static long leafA(long x) {
        for (int i = 0; i < 400; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long leafB(long x) {
        for (int i = 0; i < 400; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long a2(long x) { return leafA(x) + 1; }
    static long a1(long x) { return a2(x) ^ 3; }
    static long b1(long x) { return leafB(x) - 1; }

    static long step(int i, long x) {
        return (i & 3) != 3 ? a1(x) : b1(x);
    }

    static long loop(long x) {
        for (int i = 0; (i & 1023) != 0 || !done(); i++) x += step(i, x);
        return x;
    }

    /* a few frames below the loop, as an application's would be */
    static long base(int depth, long x) {
        if (depth == 0) return loop(x);
        return base(depth - 1, x + depth) + 1;
    }

    static void callGraph() throws Exception {
        Thread[] ts = new Thread[2];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> sink = base(6, 1), "worker-cg-" + i);
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        System.exit(report(true));
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("callgraph")) {
            callGraph();
            return;
        }
        Thread w1 = new Thread(QueueFixture::work, "worker-1");
        Thread w2 = new Thread(QueueFixture::work, "worker-2");
        w1.start();
        w2.start();
        /* A thread whose queue is registered from another thread. */
        Thread w3 = new Thread(QueueFixture::work, "worker-foreign");
        w3.start();
        registerFor(w3);
        /* The program itself suspends worker-2 for a while (Thread.suspend,
         * JDK 17; gone in JDK 20+): drains walk it but must not resume it.
         * Early in the run, while the sampling surely goes on. */
        Thread.sleep(200);
        suspendAndCheck(w2);
        shortLived();
        work();
        w1.join();
        w2.join();
        w3.join();
        System.exit(report(false));
    }
}
