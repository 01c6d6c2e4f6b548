package dev.jtrain.checkpoint;

/**
 * Runs a test body with loads forced to swap pieces into the live buffers as they land ({@code swap}) or to defer
 * every range to the copy after the agreement. Test files are small and come from the page cache, where the loader
 * would choose deferral on its own.
 */
final class SwapMode {
    interface Body {
        void run() throws Exception;
    }

    private SwapMode() {}

    static void with(boolean swap, Body body) throws Exception {
        System.setProperty(PieceReader.LEAD_PROPERTY, swap ? Long.toString(Long.MAX_VALUE) : "-1");
        try {
            body.run();
        } finally {
            System.clearProperty(PieceReader.LEAD_PROPERTY);
        }
    }
}
