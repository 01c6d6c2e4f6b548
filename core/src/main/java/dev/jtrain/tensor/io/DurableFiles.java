package dev.jtrain.tensor.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * The two steps of the POSIX recipe for a file that appears whole or not at all, after the temporary file in the
 * same directory is written and fsynced: rename it over the target (atomic within one file system), then fsync
 * the directory, because the rename lives in the directory's data (without that, a power loss can forget it).
 *
 * <p>Both fail loudly where they cannot keep that promise: there is no fallback to a copying move (a crash in the
 * middle would leave a partial file under the final name), and a directory fsync that fails on a POSIX file system
 * is an error. Only platforms that cannot open a directory at all (Windows) skip the directory fsync.
 */
public final class DurableFiles {
    private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");

    private DurableFiles() {}

    /** Renames {@code tmp} over {@code target} atomically, or throws naming both. Does not fsync the directory. */
    public static void moveAtomically(Path tmp, Path target) throws IOException {
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException("cannot rename " + tmp + " to " + target + " atomically (" + e.getReason() + "); a"
                    + " copying move could leave a partial file under the final name after a crash, so none is made."
                    + " Write to a directory on one local file system", e);
        }
    }

    /** Makes the directory's entries (renames, creations) durable; throws if a POSIX file system refuses. */
    public static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException | UnsupportedOperationException e) {
            if (!POSIX) return; // Windows cannot open a directory; the files themselves are synced
            throw new IOException("cannot fsync directory " + dir + " (" + e + "); the rename into it may not survive"
                    + " a power loss", e);
        }
    }
}
