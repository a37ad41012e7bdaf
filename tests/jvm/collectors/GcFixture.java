import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;

/* A known hot method (hot(), about 90 % of the CPU), class unloading (a
 * fresh loader per round loads gcload.Worker, runs its work() for about
 * 10 % of the CPU, and is dropped) and garbage that survives a few rounds
 * (so collectors move objects, mirrors included, while the profiler
 * samples). Under Epsilon nothing is ever collected: the garbage is kept
 * small enough for the heap the test gives.
 *
 * Usage: GcFixture <helper-class-dir> <seconds>
 * Prints "gcfixture: rounds R collected C reported U" at the end: C classes
 * whose Class object the GC cleared, U of them reported to the test
 * agent's class-unload handler (collectors_agent.c). */
public class GcFixture {
    static native int reported();

    static native int checkClass(Class<?> c);

    static int classCheck = 99;

    static long sink;

    static long hot(long n) {
        long x = n;
        for (long i = 0; i < n; i++) {
            x += (x << 7) ^ (x >>> 3) ^ i;
        }
        return x;
    }

    static int collected(List<WeakReference<Class<?>>> watch) {
        int n = 0;
        for (WeakReference<Class<?>> r : watch) if (r.get() == null) n++;
        return n;
    }

    static void awaitReports(List<WeakReference<Class<?>>> watch, long ms) throws InterruptedException {
        long end = System.nanoTime() + ms * 1_000_000L;
        while (reported() >= 0 && reported() < collected(watch) && System.nanoTime() < end) Thread.sleep(5);
    }

    public static void main(String[] args) throws Exception {
        URL helpers = Paths.get(args[0]).toUri().toURL();
        boolean epsilon = false;
        for (java.lang.management.GarbageCollectorMXBean gc :
                java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            epsilon |= gc.getName().startsWith("Epsilon");
        }
        List<WeakReference<Class<?>>> watch = new ArrayList<>();
        List<byte[]> survivors = new ArrayList<>();
        int rounds = 0;
        /* At least 3 rounds however slow the machine, so that every check
         * has something to look at. */
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        while (rounds < 3 || System.nanoTime() < deadline) {
            rounds++;
            try (URLClassLoader loader = new URLClassLoader(new URL[] {helpers}, null)) {
                Class<?> c = Class.forName("gcload.Worker", true, loader);
                LongUnaryOperator w = (LongUnaryOperator) c.getConstructor().newInstance();
                sink += w.applyAsLong(4_000_000);
                watch.add(new WeakReference<>(c));
                classCheck = Math.min(classCheck, checkClass(c));
            }
            sink += hot(40_000_000);
            if (!epsilon) {
                for (int i = 0; i < 64; i++) survivors.add(new byte[16 * 1024]);
                if (survivors.size() > 1024) survivors.subList(0, 512).clear();
                System.gc();
                /* The next Worker may get the Klass* of this one before the
                 * unload is reported (Shenandoah's concurrent unloading
                 * reports late): profile2 then holds two snapshots of that
                 * address, which name the same class (unload_index.c,
                 * "ambiguous"; one run in CI answered "" before they were
                 * compared). The wait keeps that window short; the check
                 * no longer depends on it. */
                awaitReports(watch, 2_000);
            }
        }
        int collected = 0;
        long wait = System.nanoTime() + 20_000_000_000L;
        while (true) {
            if (!epsilon) System.gc();
            collected = collected(watch);
            /* ObjectFree reaches profile2 on the service thread after the GC. */
            if (epsilon || (collected >= rounds - 1 && reported() >= collected) || System.nanoTime() > wait) break;
            Thread.sleep(50);
        }
        System.out.println("gcfixture: rounds " + rounds + " collected " + collected + " reported " + reported()
                + " classcheck " + classCheck
                + " sink " + (sink & 1));
    }
}
