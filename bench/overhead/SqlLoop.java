import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * bench/overhead.sh's long-running workload (sqlloop): an in-memory H2
 * database (Debian libh2-java) served to THREADS client threads, each with
 * its own JDBC connection, each running the same mix of statements over its
 * own slice of the rows: point lookups, a range aggregate, a join with
 * GROUP BY, updates, and every tenth iteration a statement with literals
 * (parsed anew). Each thread reads and writes only its own slice, so the
 * results do not depend on how the threads interleave: the checksum is the
 * same in every run of the same ITERATIONS.
 *
 *   SqlLoop calibrate SECONDS THREADS   runs for SECONDS, prints "iterations N"
 *                                       (the threads' mean: the work a run
 *                                       should do to last about SECONDS)
 *   SqlLoop run ITERATIONS THREADS      every thread runs ITERATIONS, prints
 *                                       "checksum C iterations N threads T"
 *
 * Progress goes to stderr: each thread's time per quarter of its iterations
 * (after the first quarter, the JIT's warm-up, the quarters should be level:
 * the steady state).
 */
public final class SqlLoop {
    static final int ROWS = 200_000;
    static final int GROUPS = 500;
    static final String URL = "jdbc:h2:mem:sqlloop;DB_CLOSE_DELAY=-1";

    public static void main(String[] args) throws Exception {
        if (args.length != 3 || !(args[0].equals("calibrate") || args[0].equals("run"))) {
            System.err.println("usage: SqlLoop calibrate SECONDS THREADS | run ITERATIONS THREADS");
            System.exit(2);
        }
        boolean calibrate = args[0].equals("calibrate");
        long n = Long.parseLong(args[1]);
        int threads = Integer.parseInt(args[2]);
        try (Connection c = DriverManager.getConnection(URL, "sa", ""); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE grp(id INT PRIMARY KEY, label VARCHAR(32))");
            s.execute("CREATE TABLE item(id INT PRIMARY KEY, grp INT NOT NULL, name VARCHAR(64), v BIGINT)");
            s.execute("INSERT INTO grp SELECT X, 'g' || MOD(X * 7, 97) FROM SYSTEM_RANGE(0, " + (GROUPS - 1) + ")");
            s.execute("INSERT INTO item SELECT X, MOD(X * 31, " + GROUPS + "), 'item-' || X, MOD(X * 17, 1000) "
                      + "FROM SYSTEM_RANGE(0, " + (ROWS - 1) + ")");
            s.execute("CREATE INDEX item_grp ON item(grp)");

            long deadline = calibrate ? System.nanoTime() + n * 1_000_000_000L : Long.MAX_VALUE;
            Worker[] ws = new Worker[threads];
            for (int t = 0; t < threads; t++) {
                ws[t] = new Worker(t, threads, calibrate ? Long.MAX_VALUE : n, deadline);
                ws[t].start();
            }
            long done = 0, sum = 0;
            for (Worker w : ws) {
                w.join();
                if (w.failure != null) {
                    throw w.failure;
                }
                done += w.iterations;
                sum = sum * 31 + w.checksum;
            }
            if (calibrate) {
                System.out.println("iterations " + Math.max(1, done / threads));
                return;
            }
            try (ResultSet r = s.executeQuery("SELECT SUM(v) FROM item")) {
                r.next();
                sum = sum * 31 + r.getLong(1);
            }
            System.out.println("checksum " + sum + " iterations " + n + " threads " + threads);
        }
    }

    static final class Worker extends Thread {
        final int lo, hi;
        final long limit, deadline;
        long iterations, checksum;
        Exception failure;
        long seed;

        Worker(int t, int threads, long limit, long deadline) {
            super("sqlloop-" + t);
            this.lo = (int) ((long) ROWS * t / threads);
            this.hi = (int) ((long) ROWS * (t + 1) / threads);
            this.limit = limit;
            this.deadline = deadline;
            this.seed = 0x9E3779B97F4A7C15L * (t + 1);
        }

        /** A row of this thread's slice (xorshift: the same sequence in every run). */
        int next(int span) {
            seed ^= seed << 13;
            seed ^= seed >>> 7;
            seed ^= seed << 17;
            return (int) Math.floorMod(seed, (long) span);
        }

        @Override
        public void run() {
            try (Connection c = DriverManager.getConnection(URL, "sa", "");
                 PreparedStatement point = c.prepareStatement("SELECT name, v FROM item WHERE id = ?");
                 PreparedStatement range = c.prepareStatement(
                     "SELECT grp, COUNT(*), SUM(v) FROM item WHERE id BETWEEN ? AND ? GROUP BY grp ORDER BY grp");
                 PreparedStatement join = c.prepareStatement(
                     "SELECT g.label, COUNT(*), SUM(i.v) FROM item i JOIN grp g ON i.grp = g.id "
                     + "WHERE i.id BETWEEN ? AND ? GROUP BY g.label ORDER BY g.label");
                 PreparedStatement update = c.prepareStatement("UPDATE item SET v = v + ? WHERE id = ?");
                 Statement adhoc = c.createStatement()) {
                int span = hi - lo;
                long quarter = limit == Long.MAX_VALUE ? 0 : Math.max(1, limit / 4);
                long t0 = System.nanoTime();
                StringBuilder quarters = new StringBuilder();
                for (long i = 0; i < limit; i++) {
                    if (limit == Long.MAX_VALUE && (i & 15) == 0 && System.nanoTime() >= deadline) {
                        break;
                    }
                    for (int k = 0; k < 10; k++) {
                        point.setInt(1, lo + next(span));
                        try (ResultSet r = point.executeQuery()) {
                            while (r.next()) {
                                checksum = checksum * 31 + r.getString(1).length() + r.getLong(2);
                            }
                        }
                    }
                    int a = lo + next(span - 1000);
                    range.setInt(1, a);
                    range.setInt(2, a + 999);
                    checksum = checksum * 31 + sum3(range.executeQuery());
                    int b = lo + next(span - 500);
                    join.setInt(1, b);
                    join.setInt(2, b + 499);
                    checksum = checksum * 31 + sum3(join.executeQuery());
                    for (int k = 0; k < 2; k++) {
                        update.setInt(1, 1 + next(9));
                        update.setInt(2, lo + next(span));
                        checksum = checksum * 31 + update.executeUpdate();
                    }
                    if (i % 10 == 0) {
                        int g = next(GROUPS), x = lo + next(span - 20000);
                        try (ResultSet r = adhoc.executeQuery("SELECT COUNT(*), MAX(v) FROM item WHERE grp = " + g
                                                              + " AND id BETWEEN " + x + " AND " + (x + 19999))) {
                            r.next();
                            checksum = checksum * 31 + r.getLong(1) + r.getLong(2);
                        }
                    }
                    iterations++;
                    if (quarter > 0 && iterations % quarter == 0 && iterations / quarter <= 4) {
                        long t1 = System.nanoTime();
                        quarters.append(String.format(" %.1f", (t1 - t0) / 1e9));
                        t0 = t1;
                    }
                }
                if (quarters.length() > 0) {
                    System.err.println("sqlloop: " + getName() + " seconds per quarter:" + quarters);
                }
            } catch (Exception e) {
                failure = e;
            }
        }

        static long sum3(ResultSet r) throws SQLException {
            long s = 0;
            try (r) {
                while (r.next()) {
                    s = s * 31 + r.getString(1).hashCode() + r.getLong(2) * 7 + r.getLong(3);
                }
            }
            return s;
        }
    }
}
