/* A server on virtual threads for the agent's test (vthreads_server_test.py):
 * the JDK's HTTP server with one virtual thread per exchange, and 32
 * virtual-thread clients sending requests until the process has used 1.5 x
 * SECONDS of CPU (at most 10 x SECONDS of wall time: a loaded machine still
 * gives the agent its samples). Each request
 * computes (work) and sleeps three times, so its virtual thread parks,
 * unmounts and resumes with its older frames still frozen in its heap
 * chunk: the walks must read them there to reach Continuation.enter.
 * Run from source (java VThreadServer.java SECONDS): JDK 21 or later. */
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class VThreadServer {
    static volatile boolean stop;

    /* xorshift, not a linear congruential step: C2 reduced 200,000 of
     * those to ~4 us (3,508 requests gave 202 samples in work, 2.5 % of the
     * profile, 98 under ASan), and the test's count of samples in work
     * then hung on how the rest of the process's CPU fell. Shifts and
     * exclusive ors in a chain cannot be folded: ~2 ns an iteration. */
    static long work(int n) {
        long x = n + 0x9E3779B97F4A7C15L;
        for (int i = 0; i < 50_000; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            long r = 0;
            for (int i = 0; i < 15; i++) {
                r += work(i);
                if (i % 5 == 0) {
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
            byte[] body = Long.toString(r).getBytes();
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        int port = server.getAddress().getPort();
        HttpClient client = HttpClient.newBuilder().executor(Executors.newVirtualThreadPerTaskExecutor()).build();
        AtomicLong done = new AtomicLong(), failed = new AtomicLong();
        long seconds = Long.parseLong(args[0]);
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpuUntil = os.getProcessCpuTime() + seconds * 1_500_000_000L;
        long wallUntil = System.nanoTime() + seconds * 10_000_000_000L;
        URI uri = URI.create("http://127.0.0.1:" + port + "/");
        Thread[] clients = new Thread[32];
        for (int i = 0; i < clients.length; i++) {
            clients[i] = Thread.ofVirtual().start(() -> {
                while (!stop) {
                    try {
                        client.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
                        done.incrementAndGet();
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
            });
        }
        while (os.getProcessCpuTime() < cpuUntil && System.nanoTime() < wallUntil) Thread.sleep(20);
        stop = true;
        for (Thread t : clients) t.join();
        server.stop(0);
        System.out.println("server done, " + done.get() + " requests, " + failed.get() + " failed");
    }
}
