/* A compiled method entered again and again from interpreted code, with
 * the stack slot where it will save rbp holding something else each time
 * (prologue_test.py).
 *
 * C2 compiles f, a leaf with a small frame, without a stack bang: its
 * prologue allocates the whole frame (`sub rsp, N`) and only then stores
 * the caller's rbp (`mov [rsp + N - 8], rbp`). loop and g stay
 * interpreted (the test excludes them from compilation): loop calls f and
 * then g, whose interpreted frame, with five long arguments, lays its own
 * words over the slot where f's next call will save rbp. A signal on f's
 * store then finds the slot holding g's word, not rbp. */
public class PrologueFixture {
    static long f(long x) {
        return (x ^ (x >>> 7)) * 31 + 1;
    }

    static long g(long a, long b, long c, long d, long e) {
        long p = a + b, q = c * d, r = e - a;
        return p ^ q ^ r;
    }

    static long loop(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = f(x);
            x = g(x, i, 3, 4, 5);
        }
        return x;
    }

    /* Runs for `seconds` of the main thread's CPU time. */
    public static void main(String[] args) {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = threads.getCurrentThreadCpuTime() + (long) (Double.parseDouble(args[0]) * 1e9), s = 0;
        while (threads.getCurrentThreadCpuTime() < end) s += loop(200_000);
        System.out.println("done " + s);
    }
}
