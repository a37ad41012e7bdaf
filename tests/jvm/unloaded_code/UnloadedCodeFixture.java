import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Paths;
import java.util.function.IntUnaryOperator;

/* Drives unloaded_code_agent.c: compiles Target.applyAsInt in a class loader
 * of its own, unloads the class, and while the unloaded nmethod is still in
 * the code cache spins in Java for the agent's signals. A class whose code
 * the sweeper flushed before the spin is tried again with a new loader.
 *
 * usage: java -agentpath:libunloaded_code_agent.so UnloadedCodeFixture HELPERS_DIR */
public class UnloadedCodeFixture {
  static native void forget();
  static native boolean compiled();
  static native boolean unloaded();
  static native boolean stillThere();
  static native void startSignals();
  static native boolean done();
  static native int report();

  static volatile long sink;
  static final int ATTEMPTS = 5;

  public static void main(String[] args) throws Exception {
    URL helpers = Paths.get(args[0]).toUri().toURL();
    boolean spun = false;
    for (int attempt = 1; attempt <= ATTEMPTS && !spun; attempt++) {
      if (!compileAndUnload(helpers)) {
        System.out.println("unloaded-code: attempt " + attempt + ": Target not compiled and unloaded in time");
        continue;
      }
      if (!stillThere()) {
        System.out.println("unloaded-code: attempt " + attempt + ": the unloaded code was flushed at once");
        continue;
      }
      startSignals();
      long x = 1;
      while (!done()) {
        for (int i = 0; i < 200_000; i++) x = x * 6364136223846793005L + i;
      }
      sink = x;
      spun = true;
    }
    System.exit(report());
  }

  /* Compile Target.applyAsInt, then drop its loader and collect until the
   * agent has seen that nmethod unloaded. */
  static boolean compileAndUnload(URL helpers) throws Exception {
    forget();
    URLClassLoader loader = new URLClassLoader(new URL[] {helpers}, null);
    IntUnaryOperator op = (IntUnaryOperator) loader.loadClass("Target").getDeclaredConstructor().newInstance();
    long deadline = System.nanoTime() + 20_000_000_000L;
    int s = 0;
    while (!compiled() && System.nanoTime() < deadline) {
      for (int i = 0; i < 10_000; i++) s += op.applyAsInt(i);
    }
    sink += s;
    if (!compiled()) return false;
    op = null;
    loader.close();
    loader = null;
    deadline = System.nanoTime() + 20_000_000_000L;
    while (!unloaded() && System.nanoTime() < deadline) {
      System.gc();
      Thread.sleep(20);
    }
    return unloaded();
  }
}
