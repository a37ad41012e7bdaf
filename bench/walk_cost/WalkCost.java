/* Driver of the walk-cost benchmark (walk_cost_agent.c says what is
 * measured). For each depth D in args (default 10 100 1000) the walked
 * stack holds D Java frames:
 *   sync:   main + descend x (D - 2) + the native syncWalks;
 *   signal: Busy.run + climb x (D - 2) + spin, on a thread of its own.
 * usage: java -agentpath:libwalk_cost_agent.so WalkCost BATCHES SIGNALS D...
 * Before measuring, the recursive methods are called often enough to be
 * compiled (unless the JVM runs -Xint): "compiled" numbers are for warm
 * code, as a profiler sees it in a long-running program. */
public class WalkCost {
    static native void syncWalks(int depth, int walks, boolean report);
    static native void registerBusy();
    static native void signalWalks(int depth, int signals);

    static volatile boolean stop;
    static volatile long sink;

    static void descend(int n, int depth, int walks, boolean report) {
        if (n > 1) descend(n - 1, depth, walks, report);
        else syncWalks(depth, walks, report);
        sink++; // not a tail call in any compiler's eyes
    }

    static void climb(int n) {
        if (n > 1) climb(n - 1);
        else spin();
        sink++;
    }

    static void spin() {
        if (stop) return; // warm-up: take every branch, or C2 prunes it and deoptimizes later
        registerBusy();
        long x = 1;
        while (!stop) x = x * 6364136223846793005L + 1442695040888963407L;
        sink += x;
    }

    static final class Busy extends Thread {
        final int depth;

        Busy(int depth) {
            super("busy-" + depth);
            this.depth = depth;
        }

        @Override
        public void run() {
            climb(depth - 2);
        }
    }

    public static void main(String[] args) throws Exception {
        int batches = Integer.parseInt(args[0]), signals = Integer.parseInt(args[1]);
        // Warm up: enough calls for C2 to compile descend and climb, through
        // the same branches as the measured calls (spin returns at once).
        stop = true;
        for (int i = 0; i < 400; i++) {
            descend(100, 100, 0, false);
            climb(100);
        }
        for (int a = 2; a < args.length; a++) {
            int depth = Integer.parseInt(args[a]);
            int walks = Math.max(100, 1_000_000 / depth);
            descend(depth - 2, depth, walks, false); // warm-up batch
            for (int b = 0; b < batches; b++) descend(depth - 2, depth, walks, true);

            stop = false;
            Busy busy = new Busy(depth);
            busy.start();
            Thread.sleep(300); // let spin's loop get compiled (OSR)
            signalWalks(depth, signals);
            stop = true;
            busy.join();
        }
    }
}
