/* Calls native probes from interpreted and from compiled code, so that the
 * test agent can classify pcs whose kind is known by construction. */
public class ClassifyFixture {
    static native void probeInterpreted();
    static native int probeCompiled(int i);
    static native int report(String mode);

    /* Kept out of inlining (CompileCommand in the test), so its compiled
     * code is the direct caller of probeCompiled's native wrapper. */
    static int compiledCaller(int i) {
        return probeCompiled(i) + 1;
    }

    public static void main(String[] args) {
        String mode = args[0];
        long sum = 0;
        if (mode.equals("interpreted")) {
            for (int i = 0; i < 100; i++) probeInterpreted();
        } else {
            for (int i = 0; i < 300_000; i++) sum += compiledCaller(i);
        }
        System.out.println("fixture: " + mode + " done (" + sum + ")");
        System.exit(report(mode));
    }
}
