// The reliability suite's program: code written to stress a stack walker.
//
//   java -Dstress.jni=/path/libstress_jni.so StressFixture SECONDS [SCENARIO...]
//
// Every scenario repeats one fixed unit of work (a "round") until the time is
// up, at least once. A round returns a checksum that depends only on the work,
// never on timing, so the output -- one line per scenario with the checksum of
// its first round and whether every later round agreed -- is byte for byte the
// same whatever the duration, the machine's speed or a profiler's presence.
// stress.py compares a profiled run's output with an unprofiled one's.
//
// The scenarios run concurrently (each in its own thread) so that the walker
// meets them interleaved: a class unloaded while another thread is deep in an
// exception, a deoptimization during a JNI upcall. The last scenario,
// `sigprof`, runs alone afterwards because it replaces the process's SIGPROF
// handler, which ends the profiler's own sampling on that signal.
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntUnaryOperator;
import java.util.function.LongSupplier;
import java.util.stream.IntStream;

public class StressFixture {
  // JNI: Java -> native -> Java, alternating down to depth 0 (stress_jni.c).
  static native int down(int depth, int x);
  static native long nativeSpin(int n);
  static native int installSigprof();
  static native long restoreSigprof();

  // The JNI library calls back here; the frames alternate Java/native.
  static int up(int depth, int x) {
    int y = x * 17 + depth;
    return down(depth - 1, y) ^ (depth << 3);
  }

  // ---- threads: thousands of short-lived threads ---------------------------
  static long threads() throws InterruptedException {
    final int n = 200;
    final long[] out = new long[n];
    Thread[] ts = new Thread[n];
    for (int i = 0; i < n; i++) {
      final int k = i;
      // Each thread lives for a few microseconds of work: it is born, sampled
      // (maybe) and gone while its timer or queue is still being set up.
      ts[i] = new Thread(() -> out[k] = recurse(k % 40, k), "short-" + i);
      ts[i].start();
      // Batches of 20 alive at once, so thread creation, not the scheduler,
      // is what the run exercises.
      if (i % 20 == 19) for (int j = i - 19; j <= i; j++) ts[j].join();
    }
    long sum = 0;
    for (long v : out) sum = sum * 31 + v;
    return sum;
  }

  static long recurse(int depth, long x) {
    return depth == 0 ? x * 2654435761L : recurse(depth - 1, x + depth) ^ depth;
  }

  // ---- classes: load and unload through custom class loaders ---------------
  public interface Op {
    long apply(long x);
  }

  // Loaded afresh by a new loader every round: its compiled code and the
  // methods in the samples queued for it die with the loader.
  public static class Payload implements Op {
    public long apply(long x) {
      long h = x;
      for (int i = 0; i < 64; i++) h = h * 6364136223846793005L + 1442695040888963407L;
      return h;
    }
  }

  // A loader that defines the named classes itself from the bytes of the
  // fixture's own class files and delegates everything else, so each instance
  // yields a new class of the same name.
  static final class OneShotLoader extends ClassLoader {
    private final String[] mine;

    OneShotLoader(String... mine) {
      super(StressFixture.class.getClassLoader());
      this.mine = mine;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      for (String m : mine) {
        if (m.equals(name)) {
          synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null) {
              byte[] b = classBytes(name);
              c = defineClass(name, b, 0, b.length);
            }
            return c;
          }
        }
      }
      return super.loadClass(name, resolve);
    }
  }

  static final java.util.Map<String, byte[]> BYTES = new java.util.concurrent.ConcurrentHashMap<>();

  static byte[] classBytes(String name) {
    return BYTES.computeIfAbsent(name, n -> {
      try (InputStream in = StressFixture.class.getResourceAsStream("/" + n.replace('.', '/') + ".class")) {
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        for (int r; (r = in.read(buf)) > 0; ) bo.write(buf, 0, r);
        return bo.toByteArray();
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    });
  }

  static long classes() throws Exception {
    long sum = 0;
    for (int i = 0; i < 20; i++) {
      ClassLoader l = new OneShotLoader("StressFixture$Payload");
      Op op = (Op) l.loadClass("StressFixture$Payload").getDeclaredConstructor().newInstance();
      // Hot enough to be compiled while the loader is alive.
      for (int j = 0; j < 2000; j++) sum += op.apply(j + i);
    }
    // Hidden classes are unloaded with no loader at all.
    MethodHandles.Lookup lookup = MethodHandles.lookup();
    for (int i = 0; i < 10; i++) {
      Class<?> h = lookup.defineHiddenClass(classBytes("StressFixture$Payload"), true).lookupClass();
      Op op = (Op) h.getDeclaredConstructor().newInstance();
      for (int j = 0; j < 500; j++) sum += op.apply(j * i);
    }
    // The loaders are unreachable now: a GC unloads them while other
    // scenarios' samples (walk=safepoint: queued) may still name their methods.
    System.gc();
    return sum;
  }

  // ---- deopt: class hierarchy changes invalidating compiled code -----------
  // The four D* classes are defined afresh by a new loader every time (never
  // referenced from the fixture's own code but by name), so every instance of
  // the scenario compiles DRun.apply anew with area() inlined on the class
  // hierarchy's word that DSq is the only implementation, and then breaks
  // that word from inside the running loop by loading DTri.
  public abstract static class DBase {
    public abstract long area(long s);
  }

  public static final class DSq extends DBase {
    public long area(long s) {
      return s * s;
    }
  }

  public static final class DTri extends DBase {
    public long area(long s) {
      return s * s / 2;
    }
  }

  public static final class DRun implements Op {
    static long sneak() {
      // Resolving DTri here loads it: a second implementation of area()
      // appears while apply's compiled (OSR) frame is on the stack, which the
      // VM deoptimizes.
      return new DTri().area(3);
    }

    public long apply(long x) {
      DBase[] shapes = new DBase[64];
      for (int i = 0; i < shapes.length; i++) shapes[i] = new DSq();
      long sum = 0;
      for (int r = 0; r < 4000; r++) {
        for (DBase s : shapes) sum += s.area(r & 1023);
        if (r == 3990 && x != 0) {
          sum += sneak();
          shapes[5] = new DTri();
        }
      }
      return sum;
    }
  }

  // A branch never taken while the method gets compiled, then taken: an
  // uncommon trap and a deoptimization (until C2 gives up on it).
  static long trap(int x, boolean rare) {
    if (rare) return x * 3L + 1;
    return x + 1L;
  }

  static long deopt() throws Exception {
    long sum = 0;
    for (int i = 0; i < 4; i++) {
      ClassLoader l = new OneShotLoader("StressFixture$DBase", "StressFixture$DSq", "StressFixture$DTri",
          "StressFixture$DRun");
      Op run = (Op) l.loadClass("StressFixture$DRun").getDeclaredConstructor().newInstance();
      sum = sum * 31 + run.apply(1);
    }
    for (int i = 0; i < 20000; i++) sum += trap(i, false);
    sum += trap(7, true);
    return sum;
  }

  // ---- exceptions through deep stacks ---------------------------------------
  static final class Deep extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int at;

    Deep(int at, boolean trace) {
      super("deep " + at, null, false, trace);
      this.at = at;
    }
  }

  static int thrower(int depth, int seed) {
    if (depth == 0) throw new Deep(seed, (seed & 1) == 0);
    try {
      return thrower(depth - 1, seed) + 1;
    } catch (Deep d) {
      // Rethrown through some frames, replaced in others: unwinding, handler
      // lookup and the frames being popped while samples are taken.
      if (depth % 50 == 0) throw new Deep(d.at + depth, (depth & 2) == 0);
      throw d;
    } finally {
      if (depth % 97 == 0) Thread.yield();
    }
  }

  static long exceptions() {
    long sum = 0;
    for (int i = 0; i < 60; i++) {
      try {
        thrower(300 + i, i);
      } catch (Deep d) {
        sum = sum * 31 + d.at;
      }
      try {
        Object o = (i % 2 == 0) ? null : "x";
        sum += o.hashCode(); // implicit null check: the signal path of HotSpot
      } catch (NullPointerException e) {
        sum += 5;
      }
    }
    return sum;
  }

  // ---- OSR: long loops in a method entered once ------------------------------
  static long osr() {
    // Entered once per round and looping long enough to be compiled on stack
    // replacement (C1, then C2) while it runs.
    long h = 1;
    for (int i = 0; i < 30_000_000; i++) {
      h ^= h << 13;
      h ^= h >>> 7;
      h ^= h << 17;
      if ((i & 0xfffff) == 0) h += i;
    }
    return h;
  }

  // ---- JNI down- and up-calls ------------------------------------------------
  static long jni() {
    long sum = 0;
    for (int i = 0; i < 200; i++) sum = sum * 31 + down(60 + i % 40, i);
    sum += nativeSpin(2_000_000);
    return sum;
  }

  // ---- lambdas, method handles, reflection -----------------------------------
  static long mh(long a, long b) {
    return a * 31 + b;
  }

  public long virt(long a) {
    return a ^ 0x5bd1e995L;
  }

  static long indirect() throws Throwable {
    long sum = 0;
    // Streams: lambdas, spun classes, deep library frames.
    sum += IntStream.range(0, 20000).map(x -> x * 3).filter(x -> x % 7 != 0).asLongStream().sum();
    IntUnaryOperator f = x -> x + 1;
    for (int i = 0; i < 5; i++) f = f.andThen(x -> x * 2 + 1);
    for (int i = 0; i < 2000; i++) sum += f.applyAsInt(i);
    // Method handles: direct, bound, and a combinator chain (LambdaForms).
    MethodHandles.Lookup lk = MethodHandles.lookup();
    MethodHandle h = lk.findStatic(StressFixture.class, "mh", MethodType.methodType(long.class, long.class, long.class));
    MethodHandle v = lk.findVirtual(StressFixture.class, "virt", MethodType.methodType(long.class, long.class))
        .bindTo(new StressFixture());
    MethodHandle chain = MethodHandles.filterReturnValue(MethodHandles.insertArguments(h, 1, 11L), v);
    for (long i = 0; i < 5000; i++) sum += (long) h.invokeExact(i, 3L) + (long) chain.invokeExact(i);
    // Reflection: past the inflation threshold (JDK 17 generates an accessor
    // class; JDK 22+ uses method handles).
    Method m = StressFixture.class.getDeclaredMethod("mh", long.class, long.class);
    for (int i = 0; i < 3000; i++) sum += (Long) m.invoke(null, (long) i, 7L);
    // A fresh lambda class per call site in a fresh hidden class: LambdaMetafactory.
    LongSupplier s = () -> 42L;
    sum += s.getAsLong();
    return sum;
  }

  // ---- GC loops ---------------------------------------------------------------
  static long gc() {
    long sum = 0;
    List<long[]> keep = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      for (int j = 0; j < 2000; j++) {
        long[] a = new long[256];
        a[j & 255] = j;
        if (j % 100 == 0) keep.add(a);
        sum += a.length;
      }
      System.gc();
    }
    for (long[] a : keep) for (long x : a) sum += x;
    return sum;
  }

  // ---- thread interruption ------------------------------------------------------
  static long interrupts() throws InterruptedException {
    final Object monitor = new Object();
    final int n = 8;
    final int[] got = new int[n];
    final CountDownLatch ready = new CountDownLatch(n);
    Thread[] ts = new Thread[n];
    for (int i = 0; i < n; i++) {
      final int k = i;
      ts[i] = new Thread(() -> {
        ready.countDown();
        // Whether the interrupt arrives before or during the blocking call,
        // each thread sees it exactly once: the result is deterministic.
        try {
          switch (k % 4) {
            case 0:
              Thread.sleep(60_000);
              break;
            case 1:
              synchronized (monitor) {
                monitor.wait(60_000);
              }
              break;
            case 2:
              while (!Thread.currentThread().isInterrupted()) LockSupport.park();
              got[k] = 3;
              return;
            default:
              Thread other = new Thread(() -> LockSupport.parkNanos(60_000_000_000L));
              other.setDaemon(true);
              other.start();
              other.join();
              break;
          }
          got[k] = 1;
        } catch (InterruptedException e) {
          got[k] = 2;
        }
      }, "interruptee-" + i);
      ts[i].start();
    }
    ready.await();
    for (Thread t : ts) t.interrupt();
    for (Thread t : ts) t.join();
    long sum = 0;
    for (int g : got) sum = sum * 10 + g;
    return sum;
  }

  // ---- sigprof: the program installs its own SIGPROF handler ----------------------
  static long sigprof() {
    // The handler only counts; the count depends on the profiler and is not
    // part of the output. The work done meanwhile is.
    int rc = installSigprof();
    long sum = rc;
    sum += osr();
    sum += jni();
    sum += exceptions();
    restoreSigprof();
    return sum;
  }

  // ---- driver ---------------------------------------------------------------------------
  interface Round {
    long run() throws Throwable;
  }

  static Round scenario(String name) {
    switch (name) {
      case "threads": return StressFixture::threads;
      case "classes": return StressFixture::classes;
      case "deopt": return StressFixture::deopt;
      case "exceptions": return StressFixture::exceptions;
      case "osr": return StressFixture::osr;
      case "jni": return StressFixture::jni;
      case "indirect": return StressFixture::indirect;
      case "gc": return StressFixture::gc;
      case "interrupts": return StressFixture::interrupts;
      case "sigprof": return StressFixture::sigprof;
      default: return null;
    }
  }

  static final String[] CONCURRENT = {
    "threads", "classes", "deopt", "exceptions", "osr", "jni", "indirect", "gc", "interrupts"
  };

  // Rounds until the deadline (at least one); the line printed depends only
  // on the first round's checksum and on whether all rounds agreed.
  static String repeat(String name, long deadline) {
    Round r = scenario(name);
    try {
      long first = r.run();
      boolean same = true;
      while (System.nanoTime() < deadline) same &= r.run() == first;
      return name + " checksum=" + Long.toHexString(first) + (same ? " stable" : " UNSTABLE");
    } catch (Throwable t) {
      return name + " FAILED " + t;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: StressFixture SECONDS [SCENARIO...]");
      System.exit(2);
    }
    String lib = System.getProperty("stress.jni");
    if (lib == null) {
      System.err.println("StressFixture: -Dstress.jni=<path of libstress_jni.so> is required");
      System.exit(2);
    }
    System.load(lib);
    double seconds = Double.parseDouble(args[0]);
    List<String> names = new ArrayList<>();
    for (int i = 1; i < args.length; i++) names.add(args[i]);
    if (names.isEmpty()) {
      for (String n : CONCURRENT) names.add(n);
      names.add("sigprof");
    }
    for (String n : names) {
      if (scenario(n) == null) {
        System.err.println("StressFixture: unknown scenario " + n);
        System.exit(2);
      }
    }
    boolean last = names.remove("sigprof");
    long start = System.nanoTime();
    // sigprof gets the last tenth of the time (at least one round).
    long total = (long) (seconds * 1e9);
    long deadline = start + (last ? total - total / 10 : total);
    String[] lines = new String[names.size()];
    Thread[] ts = new Thread[names.size()];
    for (int i = 0; i < ts.length; i++) {
      final int k = i;
      ts[i] = new Thread(() -> lines[k] = repeat(names.get(k), deadline), "scenario-" + names.get(i));
      ts[i].start();
    }
    for (Thread t : ts) t.join();
    for (String l : lines) System.out.println(l);
    if (last) System.out.println(repeat("sigprof", start + total));
  }
}
