package unloadme;

import java.util.function.IntSupplier;
import java.util.function.Supplier;

/* Loaded only through UnloadFixture's TestLoader. Creates a lambda (a hidden
 * class defined with ClassOption.STRONG in TestLoader's ClassLoaderData) and
 * uses an interface with a default method. */
public class Beta implements Supplier<Object>, Gamma {
    private int calls;

    public Object get() {
        calls++;
        IntSupplier lambda = () -> calls * 7;
        return lambda;
    }

    @Override
    public int base() {
        return 40;
    }
}
