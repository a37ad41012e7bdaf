import java.lang.invoke.MethodHandles;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;

/* Loads classes that can unload, uses them, drops them and collects until the
 * test agent (unload_agent.c) has seen every one of them reported by
 * profile2's class-unload handlers; then the agent compares the reports with
 * what JVMTI said about the classes while they were alive.
 *
 * Per round: unloadme.{Alpha, Alpha$Inner, Beta, Gamma} through a fresh
 * TestLoader (a URLClassLoader over the helper classes, which are not on the
 * class path), the lambda class Beta creates, and HiddenHelper defined as a
 * non-strong hidden class of the application loader. The same names are
 * loaded once per round, so the reports must be told apart by Klass*.
 *
 * Usage: [-Dunload.rounds=N] UnloadFixture <helper-class-dir> [attach <agent.so>]
 * With "attach", round 1 runs before the agent is attached to the running
 * JVM (dynamic attach): its classes are found by profile2's start-up scan,
 * not by ClassPrepare. */
public class UnloadFixture {
    /* -Dunload.rounds=N for stress runs by hand; the test uses the default. */
    static final int ROUNDS = Integer.getInteger("unload.rounds", 3);
    static final long TIMEOUT_MS = 90_000;
    static final String[] NAMES = {"unloadme.Alpha", "unloadme.Alpha$Inner", "unloadme.Beta", "unloadme.Gamma"};

    /* The class must be one the agent recorded at ClassPrepare (or at
     * attach); kind is for the agent's counts. */
    static native void expect(Class<?> c, String kind);

    static native int expectedCount();

    static native int reportedExpected();

    /* Prints the figures and the mismatches; 0 if all is well. */
    static native int check();

    static final class TestLoader extends URLClassLoader {
        TestLoader(URL[] urls) {
            super("unload-test", urls, UnloadFixture.class.getClassLoader());
        }
    }

    static long sink;

    static void round(Path helpers, byte[] hiddenBytes, boolean tellAgent, List<Object> keep,
                      List<WeakReference<Object>> watch) throws Exception {
        TestLoader loader = new TestLoader(new URL[] {helpers.toUri().toURL()});
        List<Class<?>> classes = new ArrayList<>();
        for (String n : NAMES) {
            classes.add(Class.forName(n, true, loader));
        }
        Supplier<?> alpha = (Supplier<?>) classes.get(0).getConstructor().newInstance();
        sink += (Integer) alpha.get();
        Supplier<?> beta = (Supplier<?>) classes.get(2).getConstructor().newInstance();
        IntSupplier lambda = (IntSupplier) beta.get();
        sink += lambda.getAsInt();
        classes.add(lambda.getClass());

        MethodHandles.Lookup hidden = MethodHandles.lookup().defineHiddenClass(hiddenBytes, true);
        Class<?> hc = hidden.lookupClass();
        if (!hc.isHidden()) throw new AssertionError("not hidden: " + hc);
        IntUnaryOperator op = (IntUnaryOperator) hc.getConstructor().newInstance();
        sink += op.applyAsInt(5);
        classes.add(hc);

        keep.add(loader);
        keep.addAll(classes);
        keep.add(alpha);
        keep.add(beta);
        keep.add(lambda);
        keep.add(op);
        watch.add(new WeakReference<>(loader));
        watch.add(new WeakReference<>(hc));
        if (tellAgent) expectAll(classes);
    }

    static void expectAll(List<Class<?>> classes) {
        for (Class<?> c : classes) {
            String kind = c.isHidden() ? (c.getClassLoader() instanceof TestLoader ? "lambda" : "hidden")
                                       : "custom-loader";
            expect(c, kind);
        }
    }

    static void attach(String agent) throws Exception {
        // Through reflection so that the fixture compiles and runs without
        // the jdk.attach module in the default (agentpath) mode.
        Class<?> vmc = Class.forName("com.sun.tools.attach.VirtualMachine");
        Object vm = vmc.getMethod("attach", String.class).invoke(null, Long.toString(ProcessHandle.current().pid()));
        try {
            vmc.getMethod("loadAgentPath", String.class).invoke(vm, agent);
        } finally {
            vmc.getMethod("detach").invoke(vm);
        }
    }

    public static void main(String[] args) throws Exception {
        Path helpers = Paths.get(args[0]);
        boolean attachMode = args.length >= 3 && args[1].equals("attach");
        byte[] hiddenBytes = Files.readAllBytes(helpers.resolve("HiddenHelper.class"));
        List<Object> keep = new ArrayList<>();
        List<WeakReference<Object>> watch = new ArrayList<>();
        List<Object> beforeAttach = new ArrayList<>();

        // All rounds stay alive together until the end, so that no Klass* of
        // an expected class is reused by another expected class.
        for (int r = 0; r < ROUNDS; r++) {
            if (attachMode && r == 0) {
                round(helpers, hiddenBytes, false, beforeAttach, watch);
                attach(args[2]);
                List<Class<?>> early = new ArrayList<>();
                for (Object o : beforeAttach) if (o instanceof Class) early.add((Class<?>) o);
                expectAll(early);
                keep.addAll(beforeAttach);
                beforeAttach.clear();
            } else {
                round(helpers, hiddenBytes, true, keep, watch);
            }
        }
        int expected = expectedCount();
        System.out.println("fixture: " + ROUNDS + " rounds loaded, agent expects " + expected
                           + " unloads (sink " + sink + ")");

        keep.clear();
        long start = System.currentTimeMillis();
        int gcs = 0;
        while (reportedExpected() < expected && System.currentTimeMillis() - start < TIMEOUT_MS) {
            System.gc();
            gcs++;
            Thread.sleep(50);
        }
        int cleared = 0;
        for (WeakReference<Object> w : watch) if (w.get() == null) cleared++;
        System.out.println("fixture: " + gcs + " System.gc() calls, " + (System.currentTimeMillis() - start)
                           + " ms; " + cleared + "/" + watch.size() + " loaders and hidden classes collected; "
                           + reportedExpected() + "/" + expected + " reported");
        int rc = check();
        System.exit(rc == 0 ? 0 : 1);
    }
}
