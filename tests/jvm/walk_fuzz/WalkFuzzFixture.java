import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;

/* Busy threads for walk_fuzz_agent.c, whose SIGPROF handler fuzzes the
 * iterator with corrupted registers: the signals must land everywhere, so
 * each thread runs a different mix of code. Every thread registers itself
 * (tid, stack bounds, a Java heap address) and runs until the agent has done
 * its walks.
 *   interp   methods excluded from compilation (meson passes
 *            -XX:CompileCommand=exclude,WalkFuzzFixture::interp*), deep
 *            recursion through them, calling compiled code and back
 *            (i2c / c2i adapters)
 *   compiled C2 code with inlining, non-inlined recursion
 *            (CompileCommand=dontinline for noinline*), allocation, exceptions
 *            thrown and caught at depth, implicit null checks, arraycopy and
 *            math intrinsics, monitor contention with the churn thread
 *   jni      Java -> native (spinning in C) -> Java -> native ... recursion,
 *            exceptions through the native frames
 *   churn    a class loaded again and again through fresh loaders, so its
 *            code always goes through interpreter, C1, C2 and OSR, and is
 *            unloaded (System.gc); deoptimization by type pollution, lambdas,
 *            reflection, method handles, sleeps (blocked states) */
public class WalkFuzzFixture {
    static native void register(long[] heapProbe);
    static native boolean done();
    static native int report();
    static native long nativeWork(int depth, long x);

    static volatile long sink;
    static final Object LOCK = new Object();

    /* ---------------------------------------------------------------- interp */

    static long interpRec(int n, long x) {
        if (n == 0) return interpLeaf(x);
        long r = interpRec(n - 1, x * 31 + n);
        if ((n & 7) == 0) r += compiledLeaf(r);
        return r + 1;
    }

    static long interpLeaf(long x) {
        for (int i = 0; i < 50; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x ^ compiledLeaf(x);
    }

    static long compiledLeaf(long x) {
        return Long.rotateLeft(x, 13) * 0x9E3779B97F4A7C15L;
    }

    /* A compiled method calling an interpreted one: c2i adapter frames. */
    static long noinlineCallsInterp(long x) {
        return interpLeaf(x) + 7;
    }

    static void interpWork(long seed) {
        long x = seed;
        for (int round = 0; !done(); round++) {
            x += interpRec(20 + (int) ((x >>> 33) & 255), x);
            x += noinlineCallsInterp(x);
        }
        sink = x;
    }

    /* -------------------------------------------------------------- compiled */

    static final class Node {
        final long v;
        final Node next;

        Node(long v, Node next) {
            this.v = v;
            this.next = next;
        }
    }

    static long noinlineRec(int n, long x, Node list) {
        if (n == 0) return noinlineLeaf(x, list);
        Node node = (n % 3 == 0) ? new Node(x, list) : list;
        return noinlineRec(n - 1, x + n, node) ^ n;
    }

    static long noinlineLeaf(long x, Node list) {
        long s = x;
        for (Node n = list; n != null; n = n.next) s += n.v;
        return s + inlinedA(s);
    }

    static long inlinedA(long x) {
        return inlinedB(x) * 3;
    }

    static long inlinedB(long x) {
        double d = Math.sqrt((double) (x & 0xFFFFF)) + Math.sin(x);
        return x + (long) d;
    }

    static long thrower(int depth, long x) {
        if (depth == 0) {
            if ((x & 3) == 0) throw new IllegalStateException("boom");
            return x;
        }
        return thrower(depth - 1, x + 1) + 1;
    }

    static long nullCheck(Node n) {
        return n.v; /* NullPointerException from an implicit null check in compiled code */
    }

    static long allocate(long x) {
        int[] a = new int[(int) (x & 255) + 1];
        for (int i = 0; i < a.length; i++) a[i] = i * (int) x;
        int[] b = new int[a.length];
        System.arraycopy(a, 0, b, 0, a.length);
        StringBuilder sb = new StringBuilder();
        sb.append(x).append('-').append(b[b.length - 1]);
        return sb.toString().hashCode() + b.length;
    }

    static void compiledWork(long seed) {
        long x = seed;
        for (int round = 0; (round & 15) != 0 || !done(); round++) {
            x += noinlineRec(10 + (int) ((x >>> 40) & 511), x, null);
            x += allocate(x);
            try {
                x += thrower(5 + (int) (x & 63), x);
            } catch (IllegalStateException e) {
                x ^= e.getStackTrace().length;
            }
            try {
                x += nullCheck((x & 1) == 0 ? new Node(x, null) : null);
            } catch (NullPointerException e) {
                x++;
            }
            if ((round & 255) == 0) {
                synchronized (LOCK) {
                    x += allocate(x);
                }
            }
        }
        sink = x;
    }

    /* ------------------------------------------------------------------- jni */

    static long callback(int depth, long x) {
        long r = noinlineRec(5 + (int) (x & 31), x, null);
        if ((x & 15) == 0) throw new IllegalArgumentException("through native frames");
        return nativeWork(depth, r) + 1;
    }

    static void jniWork(long seed) {
        long x = seed;
        while (!done()) {
            try {
                x += nativeWork(1 + (int) (x & 7), x);
            } catch (IllegalArgumentException e) {
                x += 3;
            }
            x = x * 6364136223846793005L + 1;
        }
        sink = x;
    }

    /* ----------------------------------------------------------------- churn */

    /* Loaded again through a fresh ChurnLoader for each generation. */
    public static final class Churn implements LongUnaryOperator {
        interface Shape {
            long area(long x);
        }

        static final class Square implements Shape {
            public long area(long x) {
                return x * x;
            }
        }

        static final class Circle implements Shape {
            public long area(long x) {
                return (long) (Math.PI * x * x);
            }
        }

        static final class Tri implements Shape {
            public long area(long x) {
                return x * x / 2;
            }
        }

        final Shape[] shapes = {new Square(), new Circle(), new Tri()};
        int calls;

        public long applyAsLong(long x) {
            calls++;
            /* monomorphic at first; after the C2 compile, other shapes
             * appear: uncommon trap, deoptimization */
            Shape s = shapes[calls < 3000 ? 0 : (int) ((x & 0x7fffffff) % 3)];
            long r = s.area(x & 1023);
            if (calls == 1) r += longLoop(x); /* OSR compile */
            return r + step(x, 3);
        }

        static long step(long x, int n) {
            return n == 0 ? x : step(x * 17 + n, n - 1) ^ n;
        }

        static long longLoop(long x) {
            for (int i = 0; i < 200_000; i++) x = x * 6364136223846793005L + i;
            return x;
        }
    }

    static final class ChurnLoader extends ClassLoader {
        final byte[][] bytes;
        final String[] names;

        ChurnLoader(String[] names, byte[][] bytes) {
            super(WalkFuzzFixture.class.getClassLoader());
            this.names = names;
            this.bytes = bytes;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                for (int i = 0; i < names.length; i++) {
                    if (names[i].equals(name)) {
                        Class<?> c = findLoadedClass(name);
                        if (c == null) c = defineClass(name, bytes[i], 0, bytes[i].length);
                        return c;
                    }
                }
                return super.loadClass(name, resolve);
            }
        }
    }

    static byte[] classBytes(String name) throws Exception {
        try (InputStream in = WalkFuzzFixture.class.getResourceAsStream(name.replace('.', '/') + ".class")) {
            return in.readAllBytes();
        }
    }

    static long viaHandle(MethodHandle mh, long x) throws Throwable {
        return (long) mh.invokeExact(x);
    }

    static void churnWork(long seed) throws Throwable {
        String[] names = {
            "WalkFuzzFixture$Churn", "WalkFuzzFixture$Churn$Shape", "WalkFuzzFixture$Churn$Square",
            "WalkFuzzFixture$Churn$Circle", "WalkFuzzFixture$Churn$Tri",
        };
        byte[][] bytes = new byte[names.length][];
        for (int i = 0; i < names.length; i++) bytes[i] = classBytes(names[i]);
        MethodHandle mh = MethodHandles.lookup().findStatic(WalkFuzzFixture.class, "compiledLeaf",
                MethodType.methodType(long.class, long.class));
        Method reflective = WalkFuzzFixture.class.getDeclaredMethod("inlinedA", long.class);
        long x = seed, lastGc = System.nanoTime();
        for (int gen = 0; !done(); gen++) {
            Class<?> c = new ChurnLoader(names, bytes).loadClass(names[0]);
            LongUnaryOperator op = (LongUnaryOperator) c.getDeclaredConstructor().newInstance();
            /* some generations stay interpreted, some reach C1, some C2 */
            int calls = (gen % 4 == 0) ? 100 : (gen % 4 == 1) ? 2_000 : 12_000;
            for (int i = 0; i < calls && ((i & 511) != 0 || !done()); i++) {
                x = op.applyAsLong(x);
                if ((i & 1023) == 0) {
                    x += viaHandle(mh, x);
                    x += (long) reflective.invoke(null, x);
                    List<Long> l = new ArrayList<>();
                    for (int k = 0; k < 16; k++) l.add(x + k);
                    x += l.stream().mapToLong(v -> v * 3).filter(v -> (v & 1) == 0).sum();
                }
            }
            synchronized (LOCK) {
                x += compiledLeaf(x);
            }
            if ((gen & 7) == 0) Thread.sleep(1);
            if (System.nanoTime() - lastGc > 1_000_000_000L) {
                System.gc(); /* unload old generations: their nmethods and Method*s go away */
                lastGc = System.nanoTime();
            }
        }
        sink = x;
    }

    /* ------------------------------------------------------------------ main */

    interface Body {
        void run(long seed) throws Throwable;
    }

    static Thread start(String name, Body body, long seed) {
        Thread t = new Thread(() -> {
            register(new long[64]);
            try {
                body.run(seed);
            } catch (Throwable e) {
                e.printStackTrace();
                System.exit(9);
            }
        }, name);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Throwable {
        List<Thread> threads = new ArrayList<>();
        threads.add(start("fuzz-interp", WalkFuzzFixture::interpWork, 1));
        threads.add(start("fuzz-jni", WalkFuzzFixture::jniWork, 2));
        threads.add(start("fuzz-churn", WalkFuzzFixture::churnWork, 3));
        register(new long[64]);
        compiledWork(4);
        for (Thread t : threads) t.join();
        System.exit(report());
    }
}
