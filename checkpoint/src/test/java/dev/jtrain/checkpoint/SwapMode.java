package dev.jtrain.checkpoint;

/**
 * Options that force loads to swap pieces into the live buffers as they land ({@code swap}) or to defer every range
 * to the copy after the agreement. Test files are small and come from the page cache, where the loader would choose
 * deferral on its own.
 */
final class SwapMode {
    private SwapMode() {}

    static CheckpointerOptions options(boolean swap) {
        return CheckpointerOptions.defaults().withLoadLeadBytes(swap ? Long.MAX_VALUE : -1);
    }
}
