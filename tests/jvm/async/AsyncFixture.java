/* A CPU-bound program whose call graph is known by construction: every
 * edge between its own methods is listed in async_agent.c. Two threads run
 * it (main and a worker started through a method reference) until the
 * agent has taken enough samples. */
public class AsyncFixture {
    static native boolean done();
    static native int report();

    static volatile long sink;

    static long leafA(long x) {
        for (int i = 0; i < 200; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static double leafB(double d) {
        for (int i = 0; i < 100; i++) d = Math.sqrt(d + i) * 1.0001;
        return d;
    }

    static int[] leafAlloc(int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) a[i] = i * 31;
        return a;
    }

    /* Tiny methods: with inlining forbidden (the async-walk-calls tests),
     * most of their time is prologue and epilogue. */
    static long tinyA(long x) {
        return tinyB(x) + 1;
    }

    static long tinyB(long x) {
        return x ^ (x >>> 7);
    }

    static long tinyLoop(long x) {
        for (int i = 0; i < 2000; i++) x = tinyA(x);
        return x;
    }

    static long midA(long x) {
        return leafA(x) ^ (long) leafB(x & 1023);
    }

    static long midB(long x) {
        return (long) leafB(x & 255) + leafAlloc((int) (x & 63) + 1).length;
    }

    static long rec(int n, long x) {
        if (n == 0) return midA(x);
        return rec(n - 1, x + n) + 1;
    }

    static void work() {
        long x = 1;
        for (int round = 0; (round & 63) != 0 || !done(); round++) {
            x += midA(x);
            x += midB(x);
            x += rec(12, x);
            x += tinyLoop(x);
        }
        sink = x;
    }

    static void workerEntry() {
        work();
    }

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(AsyncFixture::workerEntry, "worker");
        t.start();
        work();
        t.join();
        System.exit(report());
    }
}
