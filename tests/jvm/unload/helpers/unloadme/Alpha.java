package unloadme;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/* Loaded only through UnloadFixture's TestLoader. A mix of what the snapshot
 * has to carry: static initializer, constructors, generic signatures,
 * overloads, a native method (no line table), a member class, varargs,
 * synchronized and strictfp-free modifiers. */
public class Alpha<T extends Comparable<T>> implements Supplier<Object> {
    static final List<String> LOG = new ArrayList<>();

    static {
        LOG.add("clinit");
    }

    private final T value;

    public Alpha() {
        this(null);
    }

    protected Alpha(T value) {
        this.value = value;
    }

    public static native int neverBound(long x);

    public <U extends List<T>> U collect(U into) {
        if (value != null) {
            into.add(value);
        }
        return into;
    }

    static int sum(int... xs) {
        int s = 0;
        for (int x : xs) {
            s += x;
        }
        return s;
    }

    static long sum(long a, long b) {
        return a + b;
    }

    synchronized int twice(int x) {
        int y = x * 2;
        return y;
    }

    public Object get() {
        Inner in = new Inner(3);
        return sum(in.width(), twice(4), (int) sum(5L, 6L));
    }

    public static final class Inner {
        private final int w;

        Inner(int w) {
            this.w = w;
        }

        int width() {
            return w;
        }
    }
}
