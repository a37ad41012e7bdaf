/* A profile held to the program's own clock: the bundled demo's three
 * workloads (a long-division loop, a floating-point loop, string building)
 * inlined by C2 into one compiled loop, each section timed on the thread's
 * CPU clock. The shares of the time the program measured are the
 * shares the profile must show (timed_sections_test.py). C2 lays out the
 * inlined loops differently from run to run; where a loop's code ends next
 * to another method's, the debug information read at the wrong PcDesc moves
 * a whole loop's samples to its neighbour (walker.c, decode). */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class TimedSections {
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

    /* Each section is timed on the thread's CPU clock, which is what the
     * profile samples (event=cpu): on a loaded machine wall time would add
     * the time the thread waited for a CPU to whichever section it was in.
     * The loop runs until the thread has used the given CPU seconds (at
     * most 15 times that in wall time), so that the profile has its
     * samples however busy the machine is. */
    public static void main(String[] args) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long cpuNanos = (args.length > 0 ? Long.parseLong(args[0]) : 3) * 1_000_000_000L;
        long cpuUntil = mx.getCurrentThreadCpuTime() + cpuNanos;
        long wallUntil = System.nanoTime() + 15 * cpuNanos;
        long primes = 0, inside = 0, chars = 0, tp = 0, te = 0, tw = 0;
        long next = 1_000_000_000L;
        while (mx.getCurrentThreadCpuTime() < cpuUntil && System.nanoTime() < wallUntil) {
            long t0 = mx.getCurrentThreadCpuTime();
            for (int k = 0; k < 200; k++, next++) if (isPrime(next)) primes++;
            long t1 = mx.getCurrentThreadCpuTime();
            for (int y = 0; y < 40; y++)
                for (int x = 0; x < 40; x++)
                    if (escapes(-2.0 + x * 0.06, -1.2 + y * 0.06, 800) == 800) inside++;
            long t2 = mx.getCurrentThreadCpuTime();
            chars += words(2000).length();
            long t3 = mx.getCurrentThreadCpuTime();
            tp += t1 - t0;
            te += t2 - t1;
            tw += t3 - t2;
        }
        double all = tp + te + tw;
        System.out.printf("timed: isPrime %.2f escapes %.2f words %.2f (%d primes, %d inside, %d chars)%n",
                          100 * tp / all, 100 * te / all, 100 * tw / all, primes, inside, chars);
    }
}
