package unloadme;

/* An interface with an abstract method (no code, no line table) and a
 * default method. */
public interface Gamma {
    int base();

    default int plusTwo() {
        return base() + 2;
    }
}
