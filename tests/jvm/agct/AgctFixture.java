/* Hot compiled code for the AsyncGetCallTrace comparison (agct_agent.c):
 * loops inlined into one OSR-compiled method (the bundled demo's three
 * workloads, tools/demo/DemoProgram.java, whose code layout C2 varies from
 * run to run), a chain of calls
 * that are not inlined, and an allocation-heavy leaf. Two threads run it
 * until the agent has its samples. */
public class AgctFixture {
    static native boolean done();
    static native int report();

    static long chainA(long x) { return chainB(x) + 1; }
    static long chainB(long x) { return chainC(x) * 3; }
    static long chainC(long x) {
        long s = x;
        for (int i = 0; i < 2000; i++) s = s * 6364136223846793005L + 1442695040888963407L;
        return s;
    }

    static long mixed() {
        long primes = 0, inside = 0, chars = 0, next = 1_000_000_000L, acc = 0;
        while (!done()) {
            for (int k = 0; k < 100; k++, next++) if (DemoProgram.isPrime(next)) primes++;
            for (int y = 0; y < 20; y++)
                for (int x = 0; x < 40; x++)
                    if (DemoProgram.escapes(-2.0 + x * 0.06, -1.2 + y * 0.12, 800) == 800) inside++;
            chars += DemoProgram.words(500).length();
            for (int k = 0; k < 50; k++) acc += chainA(k);
        }
        return primes + inside + chars + acc;
    }

    public static void main(String[] args) throws Exception {
        long[] out = new long[1];
        Thread t = new Thread(() -> out[0] = mixed(), "agct-worker");
        t.start();
        long r = mixed();
        t.join();
        System.out.println("fixture result " + (r + out[0]));
        System.exit(report());
    }
}
