/* The target of the profile2 command-line tests (cli_test.py): one thread
 * spends its time in a method no JDK code has (burnCpuInCliFixture), so a
 * profile that saw the program at all has samples in it.
 *
 *   java CliFixture SECONDS [EXIT-STATUS]
 *
 * Prints "ready" once the hot method has run, then burns CPU for SECONDS
 * (0: until standard input is closed, so that a test attaches to a live
 * JVM for as long as its steps take), prints "done" and exits with
 * EXIT-STATUS (default 0). */
public class CliFixture {
  static volatile long sink;
  static volatile boolean stop;

  static long burnCpuInCliFixture(long n) {
    long h = n;
    for (int i = 0; i < 200_000; i++) {
      h = h * 6364136223846793005L + 1442695040888963407L;
      h ^= h >>> 29;
    }
    return h;
  }

  public static void main(String[] args) throws Exception {
    long seconds = Long.parseLong(args[0]);
    int status = args.length > 1 ? Integer.parseInt(args[1]) : 0;
    if (seconds == 0) {
      Thread reader = new Thread(() -> {
        try {
          while (System.in.read() >= 0) {
          }
        } catch (java.io.IOException e) {
          // closed: stop as well
        }
        stop = true;
      }, "stdin-reader");
      reader.setDaemon(true);
      reader.start();
    }
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    boolean announced = false;
    long n = 0;
    while (!stop && (seconds == 0 || System.nanoTime() < end)) {
      sink += burnCpuInCliFixture(n++);
      if (!announced) {
        System.out.println("ready");
        System.out.flush();
        announced = true;
      }
    }
    System.out.println("done " + (sink & 1));
    System.out.flush();
    System.exit(status);
  }
}
