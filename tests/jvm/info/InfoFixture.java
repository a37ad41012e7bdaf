import java.lang.reflect.Array;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/* Loads and links every class of the java.base module, plus the shapes
 * below (generics, bridges, lambdas = hidden classes, member, local and
 * anonymous classes, native/abstract/synthetic/varargs/synchronized methods,
 * line tables with large and negative deltas), then asks the test agent to
 * compare profile2's method and class information with JVMTI's for every
 * loaded class. Exits with the agent's verdict. */
public class InfoFixture {
    /* Implemented by info_agent.c: compare everything, return the number of
     * failures (0 = pass). */
    static native int check(int minClasses);

    /* Declared, never called: a native method has no line table. */
    static native void nativeNoop(int x);

    static final class Box<T extends Comparable<T>> implements Comparable<Box<T>>, Supplier<T> {
        private final T value;

        Box(T value) {
            this.value = value;
        }

        @Override
        public T get() { // plus a synthetic bridge get()Ljava/lang/Object;
            return value;
        }

        @Override
        public int compareTo(Box<T> other) { // plus a bridge compareTo(Ljava/lang/Object;)I
            return value.compareTo(other.value);
        }

        static <U extends Comparable<U>> Box<U> of(U u) {
            return new Box<>(u);
        }

        @SafeVarargs
        static <U> List<U> listOf(U... items) {
            return Arrays.asList(items);
        }
    }

    abstract static class Shape {
        abstract double area();

        protected synchronized String describe() {
            return getClass().getSimpleName() + " " + area();
        }
    }

    private static final class Circle extends Shape {
        private final double r;

        Circle(double r) {
            this.r = r;
        }

        @Override
        double area() {
            return Math.PI * r * r;
        }
    }

    protected class Inner { // not static: a synthetic this$0 field, an outer parameter
        int twice(int x) {
            return x * 2 + outerField;
        }
    }

    interface Greeter {
        String greet(String who);

        default String twice(String who) {
            return helper(greet(who)) + helper(greet(who));
        }

        private String helper(String s) {
            return "[" + s + "]";
        }

        static Greeter polite() {
            return who -> "Dear " + who; // a lambda: private static synthetic body
        }
    }

    enum Color {
        RED, GREEN, BLUE;

        Color next() {
            return values()[(ordinal() + 1) % values().length];
        }
    }

    record Point(int x, int y) {
        Point {
            if (x < 0) {
                throw new IllegalArgumentException("x");
            }
        }
    }

    int outerField = 3;

    strictfp static double strict(double a, double b) {
        return a * b + a / b;
    }

    /* Lines far apart (deltas > 7) and lines with more than 31 bytes of
     * bytecode: both need the 0xFF escape of the compressed line table; the
     * loop's condition comes after its body, a negative line delta. */
    static long longLines(int n) {
        long acc = 0;



        for (int i = 0; i < n; i++) {
            acc += (long) i * i + (acc >>> 3) + (acc ^ i) + (i % 7) * (acc | 1) + (acc & 0xFF) - (i << 2) + (acc % 13);









            acc ^= acc << 13;
        }






        return acc + Long.rotateLeft(acc, 7) + Long.numberOfTrailingZeros(acc + 1) + Long.bitCount(acc) + Long.hashCode(acc);
    }

    static Object shapes() throws Exception {
        List<Object> out = new ArrayList<>();
        Box<String> b = Box.of("x");
        out.add(b.get());
        out.add(b.compareTo(Box.of("y")));
        out.add(Box.listOf(1, 2, 3));
        out.add(new Circle(2).describe());
        out.add(new InfoFixture().new Inner().twice(4));
        out.add(Greeter.polite().twice("you"));
        out.add(Color.RED.next());
        out.add(new Point(1, 2));
        out.add(strict(3, 4));
        out.add(longLines(100));
        class Local implements Function<Integer, Integer> { // a local class
            @Override
            public Integer apply(Integer x) {
                return x + 1;
            }
        }
        out.add(new Local().apply(1));
        Object anon = new Object() { // an anonymous class
            @Override
            public String toString() {
                return "anon";
            }
        };
        out.add(anon.toString());
        Runnable lambda = () -> out.add("lambda"); // a hidden class with a capturing lambda
        lambda.run();
        Supplier<String> ref = String::new; // a method reference, another hidden class
        out.add(ref.get());
        // an array class whose element is a hidden class
        out.add(Array.newInstance(lambda.getClass(), 1));
        return out;
    }

    /* Load and link (not initialize) every class of java.base: linking is
     * what makes JVMTI GetClassMethods answer (JVMTI_CLASS_STATUS_PREPARED);
     * Class.getDeclaredMethods() links without running static initializers. */
    static int loadJavaBase() throws Exception {
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        Path base = jrt.getPath("/modules/java.base");
        List<String> names;
        try (Stream<Path> files = Files.walk(base)) {
            names = files.map(p -> base.relativize(p).toString())
                    .filter(s -> s.endsWith(".class") && !s.equals("module-info.class"))
                    .map(s -> s.substring(0, s.length() - ".class".length()).replace('/', '.'))
                    .collect(Collectors.toList());
        }
        int loaded = 0;
        for (String name : names) {
            try {
                Class<?> c = Class.forName(name, false, InfoFixture.class.getClassLoader());
                c.getDeclaredMethods();
                loaded++;
            } catch (Throwable t) {
                // some classes cannot be linked here (missing optional parts); JVMTI
                // still reports them, unprepared, and the agent compares their class data
            }
        }
        return loaded;
    }

    public static void main(String[] args) throws Exception {
        Object keep = shapes();
        int loaded = loadJavaBase();
        for (Class<?> c : InfoFixture.class.getDeclaredClasses()) {
            c.getDeclaredMethods();
        }
        System.out.println("fixture: loaded and linked " + loaded + " java.base classes; shapes " + keep.hashCode());
        System.out.flush();
        int failures = check(2000);
        System.exit(failures == 0 ? 0 : 1);
    }
}
