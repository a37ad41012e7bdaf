package gcload;

/* Loaded by a fresh class loader in every round of GcFixture and dropped
 * with it, so that it unloads while the profiler samples its work(). */
public class Worker implements java.util.function.LongUnaryOperator {
    public long applyAsLong(long n) {
        return work(n);
    }

    static long work(long n) {
        long x = n;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }
}
