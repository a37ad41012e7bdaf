/* Runs on a JVM that profile2 must refuse: it has to keep working. */
public class VersionFixture {
    static native int check();

    public static void main(String[] args) {
        long sum = 0;
        for (int i = 0; i < 1_000_000; i++) sum += i % 7;
        System.out.println("version fixture: the JVM kept running (" + sum + ")");
        System.exit(check());
    }
}
