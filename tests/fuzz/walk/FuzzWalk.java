/* The JVM side of the frame-iterator fuzzer (fuzz_walk.c, README.md one
 * folder up): a victim thread that runs Java code of every tier at varying
 * depths forever, and a main thread that hands the command line to
 * libFuzzer, which runs until its own limits and exits the process. */
public class FuzzWalk {
  static native boolean register();

  static native int fuzz(String[] args);

  static volatile long sink;

  public static void main(String[] args) throws Exception {
    System.load(System.getProperty("fuzzwalk.lib"));
    Thread victim = new Thread(FuzzWalk::victim, "fuzz-walk-victim");
    victim.setDaemon(true);
    victim.start();
    synchronized (FuzzWalk.class) {
      while (!registered) FuzzWalk.class.wait();
    }
    System.exit(fuzz(args));
  }

  static boolean registered;

  static void victim() {
    if (!register()) throw new IllegalStateException("fuzz-walk: victim not registered");
    synchronized (FuzzWalk.class) {
      registered = true;
      FuzzWalk.class.notifyAll();
    }
    for (long i = 0;; i++) sink += noinlineRec(3 + (int) (i % 47), i);
  }

  /* compiled (C1, then C2), never inlined: one physical frame per call */
  static long noinlineRec(int depth, long x) {
    if (depth == 0) return spin(x);
    switch (depth % 4) {
      case 0: return interpRec(depth - 1, x) + 1;
      case 1: return inlinedRec(depth - 1, x * 31) + 2;
      default: return noinlineRec(depth - 1, x ^ depth) + 3;
    }
  }

  /* excluded from compilation: always an interpreted frame */
  static long interpRec(int depth, long x) {
    return noinlineRec(depth, x + 7) - 1;
  }

  /* small: inlined into its compiled callers */
  static long inlinedRec(int depth, long x) {
    return noinlineRec(depth, x);
  }

  static long spin(long x) {
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005L + i;
    return x;
  }
}
