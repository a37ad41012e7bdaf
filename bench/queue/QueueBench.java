/* The workload of bench/queue_cost.sh: BUSY threads run a CPU-bound call
 * graph (a recursion 12 deep, then leaf calls) and count the calls they
 * complete; IDLE threads sleep 20 ms at a time and do a little work in
 * between (the mostly idle threads of a server). The first second is a
 * warm-up; the calls completed in the next SECONDS seconds are printed as
 * "ops N".
 *
 *   java QueueBench BUSY IDLE SECONDS
 */
public class QueueBench {
    static volatile boolean measuring, stop;
    static final java.util.concurrent.atomic.AtomicLong ops = new java.util.concurrent.atomic.AtomicLong();
    static volatile long sink;

    static long leaf(long x) {
        for (int i = 0; i < 200; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long other(long x) {
        for (int i = 0; i < 100; i++) x ^= x << 13 ^ x >>> 7;
        return x;
    }

    static long step(int i, long x) {
        return (i & 3) != 3 ? leaf(x) : other(x);
    }

    static long descend(int depth, long x) {
        if (depth == 0) {
            long done = 0;
            for (int i = 0; !stop; i++) {
                x += step(i, x);
                if ((i & 255) == 255 && measuring) done += 256;
            }
            ops.addAndGet(done);
            return x;
        }
        return descend(depth - 1, x + depth) + 1;
    }

    static void idle() {
        long x = 1;
        while (!stop) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                return;
            }
            for (int i = 0; i < 50; i++) x += step(i, x);
        }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        int busy = Integer.parseInt(args[0]), idle = Integer.parseInt(args[1]);
        double seconds = Double.parseDouble(args[2]);
        Thread[] ts = new Thread[busy + idle];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = i < busy ? new Thread(() -> sink = descend(12, 1), "bench-busy-" + i)
                             : new Thread(QueueBench::idle, "bench-idle-" + i);
            ts[i].start();
        }
        Thread.sleep(1000);
        measuring = true;
        Thread.sleep((long) (seconds * 1000));
        measuring = false;
        stop = true;
        for (Thread t : ts) t.join();
        System.out.println("ops " + ops.get());
    }
}
