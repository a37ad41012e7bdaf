import java.util.function.IntUnaryOperator;

/* Defined by UnloadFixture as a non-strong hidden class
 * (Lookup.defineHiddenClass without ClassOption.STRONG): it gets a
 * ClassLoaderData of its own and unloads alone, although its defining loader
 * is the application class loader, which never unloads. In the unnamed
 * package because a hidden class must be in its lookup class's package. */
public class HiddenHelper implements IntUnaryOperator {
    public HiddenHelper() {
    }

    @Override
    public int applyAsInt(int x) {
        int y = x + 1;
        return y * y;
    }

    static String describe() {
        return "hidden";
    }
}
