/* A thread that stays inside one JNI call (nativeSpin) for a few seconds
 * while its native stack changes: the C code recurses to depths 1..5 in
 * turn and sleeps at the bottom. Every sample has the same top Java frame
 * (the native method's), so compression keyed on that frame would merge
 * them all; queue_native_agent.c checks that different native stacks stay
 * different elements. */
public class NativeFixture {
  static native void nativeSpin(int millis);

  static native int report();

  public static void main(String[] args) throws Exception {
    Thread t = new Thread(() -> nativeSpin(3000), "native-worker");
    t.start();
    t.join();
    int rc = report();
    System.out.println("native fixture done");
    System.exit(rc);
  }
}
