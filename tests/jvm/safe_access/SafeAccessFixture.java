/* Keeps the JVM busy in Java code (so compiled code with implicit null
 * checks, i.e. HotSpot's own SIGSEGV handling, runs) while the test agent
 * performs fault-tolerant reads from a SIGPROF handler. */
public class SafeAccessFixture {
    static native void start();
    static native boolean done();
    static native long report();

    static int[] maybeNull(int i) {
        return (i % 7 == 0) ? null : new int[] {i};
    }

    /* Hot enough to be JIT-compiled; the NPE on null arrays is an implicit
     * null check in compiled code: a SIGSEGV that HotSpot turns into an
     * exception. It must keep working with our handler chained in front. */
    static long work(int rounds) {
        long sum = 0, npes = 0;
        for (int i = 0; i < rounds; i++) {
            try {
                sum += maybeNull(i)[0];
            } catch (NullPointerException e) {
                npes++;
            }
        }
        return sum * 31 + npes;
    }

    public static void main(String[] args) {
        long expected = 0, got = 0;
        int rounds = 20_000;
        for (int i = 0; i < rounds; i++) {
            if (i % 7 != 0) expected += i;
        }
        expected = expected * 31 + (rounds + 6) / 7;
        long iterations = 0;
        work(rounds); /* warm up: get work() compiled */
        start();
        while (!done()) {
            got = work(rounds);
            iterations++;
            if (got != expected) {
                System.out.println("FAIL: implicit null checks broken: " + got + " != " + expected);
                System.exit(3);
            }
        }
        System.out.println("fixture: " + iterations + " work rounds with NPEs handled correctly");
        if (iterations < 1) {
            System.out.println("FAIL: reads finished before Java code ran alongside");
            System.exit(7);
        }
        System.exit((int) report());
    }
}
