/* The bundled demo program: three workloads in one loop for a few seconds
 * of CPU time. On JDK 17 and 25 C2 inlines all three into one compiled loop;
 * isPrime's long divisions take about 42 % of the loop's time, escapes about
 * 56 %, the StringBuilder work (words) under 2 %, and the JIT compiler
 * threads a few percent of the process.
 *
 * The program times each section on the thread's CPU clock, which is what
 * a cpu-mode profile samples, and prints the split: the profile's shares of
 * DemoProgram.main's weight must be these (tests/jvm/agent/
 * timed_sections_test.py holds the agent to them within a few points). C2
 * lays the inlined loops out differently from run to run; where one loop's
 * code ends next to another's, reading the debug information at the wrong
 * PcDesc moves a whole loop's samples to its neighbour (lib/walk/
 * nmethod_scopes.c). tests/jvm/agct/AgctFixture.java runs these workloads
 * too. */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

public class DemoProgram {
    static boolean isPrime(long n) {
        if (n < 2) return false;
        for (long d = 2; d * d <= n; d++) {
            if (n % d == 0) return false;
        }
        return true;
    }

    static int escapes(double cr, double ci, int limit) {
        double zr = 0, zi = 0;
        int i = 0;
        while (i < limit && zr * zr + zi * zi < 4.0) {
            double t = zr * zr - zi * zi + cr;
            zi = 2 * zr * zi + ci;
            zr = t;
            i++;
        }
        return i;
    }

    static String words(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append("w").append(i % 97).append(' ');
        }
        return sb.toString();
    }

    /* Runs until the thread has used the given seconds of CPU (at most 15
     * times that in wall time), so that a loaded machine still gives the
     * profile its samples; on a loaded machine wall-clock section times
     * would also count the waits for a CPU. */
    public static void main(String[] args) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long cpuNanos = (long) ((args.length > 0 ? Double.parseDouble(args[0]) : 3) * 1e9);
        long cpuUntil = mx.getCurrentThreadCpuTime() + cpuNanos;
        long wallUntil = System.nanoTime() + 15 * cpuNanos;
        long primes = 0, inside = 0, chars = 0, tp = 0, te = 0, tw = 0;
        List<String> keep = new ArrayList<>();
        long next = 1_000_000_000L;
        while (mx.getCurrentThreadCpuTime() < cpuUntil && System.nanoTime() < wallUntil) {
            long t0 = mx.getCurrentThreadCpuTime();
            for (int k = 0; k < 200; k++, next++) if (isPrime(next)) primes++;
            long t1 = mx.getCurrentThreadCpuTime();
            for (int y = 0; y < 40; y++)
                for (int x = 0; x < 40; x++)
                    if (escapes(-2.0 + x * 0.06, -1.2 + y * 0.06, 800) == 800) inside++;
            long t2 = mx.getCurrentThreadCpuTime();
            String w = words(2000);
            chars += w.length();
            if (keep.size() < 16) keep.add(w);
            long t3 = mx.getCurrentThreadCpuTime();
            tp += t1 - t0;
            te += t2 - t1;
            tw += t3 - t2;
        }
        double all = Math.max(tp + te + tw, 1);
        System.out.println("demo: " + primes + " primes, " + inside + " points inside, " + chars + " chars");
        System.out.printf("demo: the loop's own CPU clock: isPrime %.2f %%, escapes %.2f %%, words %.2f %%%n",
                          100 * tp / all, 100 * te / all, 100 * tw / all);
    }
}
