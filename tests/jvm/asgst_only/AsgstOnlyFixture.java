// Two threads spin in hotLoop() for the given number of seconds while main
// waits; with "wait-for-attach", main first prints "ready" and waits for a
// line on stdin (the test driver sends it after jcmd JVMTI.agent_load).
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class AsgstOnlyFixture {
  static volatile double sink;

  static double hotLoop(long until) {
    double x = 0;
    while (System.nanoTime() < until) {
      for (int i = 1; i < 10_000; i++) x += (double) (i ^ (i >> 3)) / i;
    }
    return x;
  }

  public static void main(String[] args) throws Exception {
    double seconds = Double.parseDouble(args[0]);
    if (args.length > 1 && args[1].equals("wait-for-attach")) {
      System.out.println("ready");
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in)).readLine();
    }
    long until = System.nanoTime() + (long) (seconds * 1e9);
    Thread[] workers = new Thread[2];
    for (int t = 0; t < workers.length; t++) {
      workers[t] = new Thread(() -> sink += hotLoop(until), "worker-" + t);
      workers[t].start();
    }
    for (Thread w : workers) w.join();
    System.out.println("done");
  }
}
