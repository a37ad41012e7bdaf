import java.io.InputStream;

/* Fixture of the conformance test (conformance_agent.c): the points where
 * profile2 was brought to the proposal's contract (docs/conformance.md).
 *   - ASGST_Enqueue into the queue of another, stopped thread: "spinner"
 *     runs Java code and is stopped in a signal handler (its ucontext is
 *     handed over), "sleeper" sleeps (NULL ucontext: its last Java frame);
 *   - ASGST_JClassToClass inside a signal handler;
 *   - absent strings (generic signatures) in method and class information,
 *     for live classes and in the class-unload handler (snapshots).
 * Exit status 0 when the agent found no difference. */
public class ConformanceFixture {
    static native int register(int which);
    static native int check(Thread spinner, Thread sleeper);
    static native boolean unloadSeen();
    static native int unloadResult();

    static volatile boolean stop;
    static volatile int registered;
    static volatile long sink;

    /* Has a generic signature; spin() has none. */
    static <T> T ident(T t) {
        return t;
    }

    /* Kept interpreted (-XX:CompileCommand=exclude): an OSR compilation
     * between the capture and the drain would replace the frame. */
    static void spin() {
        long x = 1;
        while (!stop) {
            x = x * 31 + 7;
        }
        sink = x;
    }

    static void spinner() {
        if (register(0) == 0) registered++;
        spin();
    }

    static void sleepDeep() throws InterruptedException {
        Thread.sleep(600_000);
    }

    static void sleeper() {
        if (register(1) == 0) registered++;
        try {
            sleepDeep();
        } catch (InterruptedException e) {
            // the end of the test
        }
    }

    /* Loaded through OneShot, then unloaded; generic class, one generic
     * method, one plain method. */
    public static class Unloadable<T> {
        public T keep;

        public int plain(int x) {
            return x + 1;
        }

        public <U> U gen(U u) {
            return u;
        }
    }

    static final class OneShot extends ClassLoader {
        OneShot() {
            super(null);
        }

        Class<?> define(byte[] b) {
            return defineClass("ConformanceFixture$Unloadable", b, 0, b.length);
        }
    }

    static void loadAndDrop(byte[] bytes) throws Exception {
        Class<?> c = new OneShot().define(bytes);
        Object o = c.getDeclaredConstructor().newInstance();
        c.getMethod("plain", int.class).invoke(o, 1);
        c.getMethod("gen", Object.class).invoke(o, "x");
    }

    public static void main(String[] args) throws Exception {
        if (ident("x") == null) throw new AssertionError();
        Thread sp = new Thread(ConformanceFixture::spinner, "spinner");
        Thread sl = new Thread(ConformanceFixture::sleeper, "sleeper");
        sp.start();
        sl.start();
        for (int i = 0; i < 500 && registered < 2; i++) Thread.sleep(10);
        if (registered < 2) {
            System.err.println("conformance: queues not registered");
            System.exit(1);
        }
        Thread.sleep(300); // both in place: spinning, sleeping
        int failures = check(sp, sl);
        stop = true;
        sl.interrupt();
        sp.join();
        sl.join();

        byte[] bytes;
        try (InputStream in = ConformanceFixture.class.getResourceAsStream("ConformanceFixture$Unloadable.class")) {
            bytes = in.readAllBytes();
        }
        loadAndDrop(bytes);
        for (int i = 0; i < 100 && !unloadSeen(); i++) {
            System.gc();
            Thread.sleep(50);
        }
        int unload = unloadResult();
        if (unload < 0) {
            System.err.println("conformance: the class was not unloaded");
            failures++;
        } else {
            failures += unload;
        }
        System.out.println("conformance: " + failures + " failures");
        System.exit(failures == 0 ? 0 : 1);
    }
}
