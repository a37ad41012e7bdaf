/* Two hot call chains whose shape is known by construction:
 * main -> chainA -> leafA and main -> chainB -> leafB, leafA doing twice
 * the work of leafB. RetransformAgent retransforms this class in a loop
 * meanwhile, so every method gets new versions (new Method*s) and the old
 * ones are freed while the profiler samples them.
 *
 * Usage: RedefFixture <seconds> */
public class RedefFixture {
    static long sink;

    static long leafA(long n) {
        long x = n;
        for (long i = 0; i < 2 * n; i++) x += (x << 5) ^ (x >>> 7) ^ i;
        return x;
    }

    static long leafB(long n) {
        long x = n;
        for (long i = 0; i < n; i++) x += (x << 3) ^ (x >>> 11) ^ i;
        return x;
    }

    static long chainA(long n) {
        return leafA(n) + 1;
    }

    static long chainB(long n) {
        return leafB(n) + 2;
    }

    public static void main(String[] args) throws Exception {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        while (System.nanoTime() < deadline) {
            sink += chainA(200_000);
            sink += chainB(200_000);
        }
        System.out.println("redeffixture: retransformations " + RetransformAgent.count() + " sink " + (sink & 1));
    }
}
