/* The bundled demo program: three workloads in one loop for a few seconds.
 * On JDK 17 and 25 (C2, all three inlined into one compiled loop) isPrime's
 * long divisions take about 42 % of the loop's time and escapes about 56 %
 * (the program's own clock: tests/jvm/agent/TimedSections.java is this loop
 * with each section timed), the StringBuilder work (words) under 2 %; the
 * JIT compiler threads take a few percent of the process. tests/jvm/agent
 * has the fixtures whose shares are fixed by construction. */
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

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 3;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long primes = 0, inside = 0, chars = 0;
        List<String> keep = new ArrayList<>();
        long next = 1_000_000_000L;
        while (System.nanoTime() < end) {
            for (int k = 0; k < 200; k++, next++) if (isPrime(next)) primes++;
            for (int y = 0; y < 40; y++)
                for (int x = 0; x < 40; x++)
                    if (escapes(-2.0 + x * 0.06, -1.2 + y * 0.06, 800) == 800) inside++;
            String w = words(2000);
            chars += w.length();
            if (keep.size() < 16) keep.add(w);
        }
        System.out.println("demo: " + primes + " primes, " + inside + " points inside, " + chars + " chars");
    }
}
