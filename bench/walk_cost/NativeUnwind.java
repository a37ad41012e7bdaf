/* Driver of the native-unwinding study (native_unwind_agent.c says what is
 * measured): keeps busy, until the agent has taken its samples,
 *   - the JIT compilers: javac compiles the given sources in a loop, and
 *     fresh class loaders define the Work class again and again, so there
 *     is always new code for C1 and C2;
 *   - the GC: a thread allocates and drops arrays;
 *   - C code under JNI: a thread calls nativeWork (recursion and qsort in C).
 * usage: java -agentpath:libnative_unwind_agent.so=SAMPLES NativeUnwind OUTDIR SOURCE... */
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public class NativeUnwind {
    static native long nativeWork(int rounds);
    static native boolean samplingDone();

    static volatile boolean stop;
    static volatile long sink;

    /* Loaded afresh by each loader: its methods are new code every time. */
    public static final class Work {
        public static long run(long n) {
            long x = n;
            for (int i = 0; i < 2000; i++) {
                if ((x & 3) == 0) x = x * 31 + i;
                else if ((x & 3) == 1) x ^= x >>> 7;
                else x += Long.rotateLeft(x, i & 63);
            }
            return x;
        }
    }

    static final class Fresh extends ClassLoader {
        final byte[] bytes;

        Fresh(byte[] bytes) {
            super(NativeUnwind.class.getClassLoader());
            this.bytes = bytes;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.equals(Work.class.getName())) {
                synchronized (this) {
                    Class<?> c = findLoadedClass(name);
                    return c != null ? c : defineClass(name, bytes, 0, bytes.length);
                }
            }
            return super.loadClass(name, resolve);
        }
    }

    static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        String out = args[0];
        List<String> javacArgs = new ArrayList<>(List.of("-d", out, "-proc:none"));
        for (int i = 1; i < args.length; i++) javacArgs.add(args[i]);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        OutputStream nul = OutputStream.nullOutputStream();
        daemon("javac-loop", () -> {
            while (!stop) javac.run(null, nul, nul, javacArgs.toArray(new String[0]));
        });

        byte[] bytes;
        try (InputStream in = NativeUnwind.class.getResourceAsStream("NativeUnwind$Work.class")) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            bytes = b.toByteArray();
        }
        daemon("fresh-code", () -> {
            try {
                while (!stop) {
                    Method m = new Fresh(bytes).loadClass(Work.class.getName()).getMethod("run", long.class);
                    long s = 0;
                    for (int i = 0; i < 20000; i++) s += (Long) m.invoke(null, (long) i);
                    sink += s;
                }
            } catch (ReflectiveOperationException e) {
                throw new RuntimeException(e);
            }
        });
        daemon("allocator", () -> {
            List<long[]> keep = new ArrayList<>();
            while (!stop) {
                for (int i = 0; i < 1000; i++) keep.add(new long[64 + i % 512]);
                if (keep.size() > 200_000) keep.clear();
            }
        });
        daemon("jni-work", () -> {
            while (!stop) sink += nativeWork(200);
        });

        long deadline = System.nanoTime() + 900_000_000_000L;
        while (!samplingDone() && System.nanoTime() < deadline) Thread.sleep(200);
        stop = true;
        System.out.flush();
        System.exit(samplingDone() ? 0 : 1);
    }
}
