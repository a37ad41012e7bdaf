/* Stacks of known shape for the iterator oracle test. Every scenario ends
 * in check() (a native method: the agent walks the stack with profile2 and
 * compares it with JVMTI GetStackTrace) or in target() (a JVMTI breakpoint
 * is set at its first bytecode; the agent compares in the callback). Each
 * scenario runs many times so that its methods get JIT-compiled under the
 * compilation mode of the run (-Xint, C1, C2, tiered). */
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.util.function.IntUnaryOperator;
import java.util.stream.IntStream;

public class WalkFixture {
    static native void check();
    static native void upcall(Runnable r);
    static native int summary();
    /* check() for code running in a virtual thread (JDK 21+) */
    static native void checkVirtual();

    static int sink;

    static void target() { sink++; }

    static int recurse(int depth) {
        if (depth == 0) {
            check();
            target();
            return 1;
        }
        return recurse(depth - 1) + 1;
    }

    /* Small methods that the JIT inlines into each other. */
    static int leaf(int x) { check(); return x + 1; }
    static int mid(int x) { return leaf(x) * 2; }
    static int top(int x) { return mid(x) - 1; }

    static int throwDeep(int depth) {
        if (depth == 0) throw new IllegalStateException("bottom");
        try {
            return throwDeep(depth - 1);
        } finally {
            if (depth % 50 == 0) check();
        }
    }

    static int exceptions() {
        try {
            return throwDeep(300);
        } catch (IllegalStateException e) {
            check();
            return -1;
        }
    }

    static int lambdas() {
        IntUnaryOperator op = x -> { check(); return x * 3; };
        return IntStream.range(0, 5).map(op).map(x -> x + 1).sum();
    }

    public static int reflected(int x) { check(); target(); return x; }

    static final MethodHandle MH;
    static {
        try {
            MH = MethodHandles.lookup().findStatic(WalkFixture.class, "reflected",
                    MethodType.methodType(int.class, int.class));
        } catch (ReflectiveOperationException e) {
            throw new AssertionError(e);
        }
    }

    static int reflection() throws Throwable {
        Method m = WalkFixture.class.getMethod("reflected", int.class);
        int a = (Integer) m.invoke(null, 7);
        int b = (int) MH.invokeExact(8);
        return a + b;
    }

    static void upcalls() {
        upcall(() -> { check(); target(); recurse(20); });
    }

    /* A hot loop: compiled code with a native call in it (OSR too). */
    static long hot(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += top(i);
            if (i % 1000 == 0) check();
        }
        return s;
    }

    static int virtualRecurse(int depth) {
        if (depth == 0) {
            checkVirtual();
            /* Resumed, the virtual thread gets its top frames back first:
             * the others stay in its heap chunk below the return barrier,
             * where the walk must read them (vm/stack_chunk.h). */
            Thread.yield();
            checkVirtual();
            return 1;
        }
        return virtualRecurse(depth - 1) + 1;
    }

    /* Runs virtualRecurse in virtual threads where the JDK has them
     * (through reflection: this file compiles with JDK 17). */
    static int virtualThreads(int rounds) throws Throwable {
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            return 0;
        }
        Object builder = ofVirtual.invoke(null);
        /* through the public interface: the builder's class is internal */
        Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
        for (int i = 0; i < rounds; i++) {
            int depth = i % 30;
            Thread t = (Thread) start.invoke(builder, (Runnable) () -> virtualRecurse(depth));
            t.join();
        }
        return rounds;
    }

    public static void main(String[] args) throws Throwable {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        Thread t = new Thread(() -> recurse(100), "second-thread");
        t.start();
        t.join();
        recurse(2500); /* deep: at least 2,000 frames */
        for (int r = 0; r < rounds; r++) {
            recurse(r % 40);
            top(r);
            exceptions();
            lambdas();
            reflection();
            upcalls();
        }
        hot(200_000);
        virtualThreads(200);
        System.exit(summary());
    }
}
