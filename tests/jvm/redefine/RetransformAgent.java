import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.concurrent.atomic.AtomicLong;

/* What coverage and APM agents do: retransform classes in a loop. A
 * transformer that returns null keeps the class file as it is, yet
 * HotSpot installs new Method*s each time (VM_RedefineClasses) and frees
 * the old ones once no frame uses them. Every other round the transformer
 * returns a copy of the bytes instead (the same class, but handed back as
 * transformed). Runs on a daemon thread until the JVM exits. */
public class RetransformAgent {
    static final AtomicLong rounds = new AtomicLong();

    public static long count() {
        return rounds.get();
    }

    public static void premain(String args, Instrumentation inst) {
        inst.addTransformer(new ClassFileTransformer() {
            public byte[] transform(ClassLoader l, String name, Class<?> c, ProtectionDomain pd, byte[] b) {
                if (!"RedefFixture".equals(name)) return null;
                return (rounds.get() & 1) == 0 ? null : b.clone();
            }
        }, true);
        Thread t = new Thread(() -> {
            try {
                Class<?> target = Class.forName("RedefFixture");
                while (true) {
                    inst.retransformClasses(target);
                    rounds.incrementAndGet();
                    Thread.sleep(1);
                }
            } catch (Exception e) {
                e.printStackTrace();
                System.exit(3);
            }
        }, "retransformer");
        t.setDaemon(true);
        t.start();
    }
}
