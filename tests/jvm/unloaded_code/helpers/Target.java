/* Loaded by UnloadedCodeFixture through a class loader of its own, compiled,
 * then unloaded with that loader. */
public class Target implements java.util.function.IntUnaryOperator {
  private int state = 17;

  @Override
  public int applyAsInt(int x) {
    state = state * 31 + x;
    return (state >>> 3) ^ x;
  }
}
