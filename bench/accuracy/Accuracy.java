/*
 * Microbenchmarks whose hot spot is known by construction (issue 6, item 2;
 * driven by bench/accuracy.sh). One case per run:
 *
 *   java [flags] -cp DIR Accuracy CASE [SECONDS]      (default 5 s)
 *
 * A single thread named "hot" calls the case's hot method in a loop for
 * SECONDS; main only waits for it. Every case spends (nearly) all of the
 * hot thread's time on one line of one method, marked
 *
 *     // HOT: <case>
 *
 * in this file; bench/accuracy/score.py takes the hot methods and lines from these
 * markers (the comment sits on the hot line itself, inside the hot method).
 * The loop of each hot method is written on one line so that every bytecode
 * of the loop (compare, load, multiply, add, increment, branch) belongs to
 * the hot line, and a sample anywhere in the loop is a sample on that line.
 *
 * Cases (the first three are the safepoint-bias cases of seeds/004):
 *   counted     a counted loop in a method that is not inlined (C2 gives the
 *               loop no safepoint poll under -XX:-UseCountedLoopSafepoints;
 *               the nearest poll is the method's return)
 *   beforecall  a hot loop just before a call to a cheap non-inlined method
 *   chain       a hot loop at the top of a chain of 9 cheap non-inlined calls
 *   jni         time in C code called from a native method (libaccuracy.so):
 *               the true top Java frame is the native method nativeWork, which
 *               has no line
 *   interp      the hot loop in a method the JIT may not compile
 *
 * With -Daccuracy.stacks=FILE a daemon thread samples the hot thread with
 * Thread.getStackTrace() every millisecond and writes the count of each top
 * frame ("Class.method:line", ":native" for a native method) to FILE at the
 * end: a safepoint-biased reference sampler (HotSpot takes another thread's
 * stack in a handshake, which the thread runs at its next safepoint poll),
 * the kind of profiler seeds/004 measures; it shows whether a case can tell
 * a biased sampler apart at all.
 *
 * "Not inlined" and "not compiled" are imposed by bench/accuracy.sh with
 * -XX:CompileCommand=dontinline,... / exclude,... (as JMH's @CompilerControl
 * does in seeds/004); without them C2 would inline the callees and move the
 * hot spot.
 */
public final class Accuracy {
  static final int N = 1 << 16; // 256 KB of ints: in L2, ~0.1 ms per call compiled
  static final int[] DATA = new int[N];
  static volatile long sink, calls;

  static {
    for (int i = 0; i < N; i++) DATA[i] = i * 0x9E3779B1;
  }

  // --- counted: counted loop in a non-inlined method ------------------------
  static int counted(int[] a) {
    int s = 0;
    for (int i = 0; i < a.length; i++) s = 31 * s + a[i]; // HOT: counted
    return s;
  }

  // --- beforecall: hot code just before a cheap non-inlined call -------------
  static int beforeCall(int[] a) {
    int s = 0;
    for (int i = 0; i < a.length; i++) s = 31 * s + a[i]; // HOT: beforecall
    return cheap(s);
  }

  static int cheap(int s) {
    return s ^ (s >>> 16);
  }

  // --- chain: hot loop at the top of 9 levels of cheap non-inlined calls -----
  static int chainTop(int[] a) {
    int s = 0;
    for (int i = 0; i < a.length; i++) s = 31 * s + a[i]; // HOT: chain
    return level1(s);
  }

  static int level1(int s) { return level2(s) + 1; }
  static int level2(int s) { return level3(s) + 2; }
  static int level3(int s) { return level4(s) + 3; }
  static int level4(int s) { return level5(s) + 4; }
  static int level5(int s) { return level6(s) + 5; }
  static int level6(int s) { return level7(s) + 6; }
  static int level7(int s) { return level8(s) + 7; }
  static int level8(int s) { return level9(s) + 8; }
  static int level9(int s) { return s ^ (s >>> 16); }

  // --- jni: time in C code under a native method -----------------------------
  static native long nativeWork(int n); // HOT: jni (the method; native code has no line)

  // --- interp: interpreted only -----------------------------------------------
  static int interp(int[] a, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s = 31 * s + a[i]; // HOT: interp
    return s;
  }

  static long step(String c) {
    switch (c) {
      case "counted": return counted(DATA);
      case "beforecall": return beforeCall(DATA);
      case "chain": return chainTop(DATA);
      case "jni": return nativeWork(N);
      case "interp": return interp(DATA, 4096); // ~40x slower interpreted: keep calls short
      default: throw new IllegalArgumentException("unknown case " + c);
    }
  }

  static void drive(String c, long nanos) {
    long end = System.nanoTime() + nanos;
    long s = 0, calls = 0;
    while (System.nanoTime() < end) {
      for (int k = 0; k < 8; k++) s += step(c);
      calls += 8;
    }
    sink = s;
    Accuracy.calls = calls; // printed by main: string concatenation links a call site, not hot work
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: Accuracy counted|beforecall|chain|jni|interp [SECONDS]");
      System.exit(2);
    }
    String c = args[0];
    long nanos = (long) (1e9 * (args.length > 1 ? Double.parseDouble(args[1]) : 5));
    if (c.equals("jni")) System.loadLibrary("accuracy");
    step(c); // fail early on a bad case name or a missing library, and link the calls in main
    Thread t = new Thread(() -> drive(c, nanos), "hot");
    String stacks = System.getProperty("accuracy.stacks");
    Thread sampler = null;
    java.util.Map<String, Integer> tops = new java.util.HashMap<>();
    if (stacks != null) {
      sampler = new Thread(() -> sampleStacks(t, tops), "stack-sampler");
      sampler.setDaemon(true);
    }
    t.start();
    if (sampler != null) sampler.start();
    t.join();
    System.out.println("accuracy: case=" + c + " calls=" + calls);
    if (sampler != null) {
      sampler.interrupt();
      sampler.join();
      try (java.io.PrintWriter w = new java.io.PrintWriter(stacks)) {
        for (java.util.Map.Entry<String, Integer> e : tops.entrySet()) w.println(e.getKey() + " " + e.getValue());
      }
    }
  }

  /* The safepoint-biased reference sampler (see the header comment). */
  static void sampleStacks(Thread hot, java.util.Map<String, Integer> tops) {
    while (!Thread.currentThread().isInterrupted() && hot.isAlive()) {
      StackTraceElement[] st = hot.getStackTrace();
      if (st.length > 0 && hot.isAlive()) {
        StackTraceElement f = st[0];
        String k = f.getClassName() + "." + f.getMethodName() + ":"
            + (f.isNativeMethod() ? "native" : Integer.toString(f.getLineNumber()));
        tops.merge(k, 1, Integer::sum);
      }
      try {
        Thread.sleep(1);
      } catch (InterruptedException e) {
        return;
      }
    }
  }
}
