package dev.jtrain.comm.store;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The files of a holder's shared-memory directory (see {@link BulkStoreServer}'s ADOPT), and how their pages are
 * reused. A value adopted from a file keeps the file's pages, mapped, and its name; when the value is freed the file
 * is renamed {@code free-<size>-<n>} instead of deleted, and a client about to write a chunk of that size claims it
 * by renaming it to its own name, then overwrites it in place. Writing into fresh shared-memory pages costs the
 * writing rank the kernel's allocation of every page, several times the copy itself on a virtual machine whose
 * memory the hypervisor backs on first touch (bench/MEASUREMENTS.md); overwriting costs only the copy. It is the
 * {@link BlockPool} rule for files: freed memory serves the next value of the same size, within a cap.
 *
 * <p>The rename is atomic, so two clients never claim one file. What the directory holds is removed with it when the
 * launcher ends (or by the next launcher on the host, if this one was killed).
 */
public final class AdoptionDirectory {
    private static final String FREE = "free-";
    private static final AtomicLong SEQ = new AtomicLong();

    private final Path dir;

    AdoptionDirectory(Path dir) { this.dir = dir; }

    Path dir() { return dir; }

    /** Whether {@code name} names a file directly inside the directory (no separator, not "." or ".."). */
    public static boolean isPlainName(String name) {
        return !name.isEmpty() && !name.contains("/") && !name.contains("\\") && !name.equals(".") && !name.equals("..");
    }

    /**
     * Client side: {@code dir/name}, made from a freed file of exactly {@code size} bytes when there is one (to be
     * overwritten from offset 0), else a new file of {@code size} bytes, sparse (no page is allocated before it is
     * written). Every file of a holder then has the one size its clients claim, so a freed file fits the next chunk
     * whatever part of it the last one filled. Returns whether a freed file was reused.
     */
    public static boolean claim(Path dir, long size, String name) throws IOException {
        Path target = dir.resolve(name);
        try (DirectoryStream<Path> free = Files.newDirectoryStream(dir, FREE + size + "-*")) {
            for (Path f : free) {
                try {
                    Files.move(f, target, StandardCopyOption.ATOMIC_MOVE);
                    return true;
                } catch (NoSuchFileException taken) {
                    // another client claimed it first
                } catch (AtomicMoveNotSupportedException e) {
                    break;
                }
            }
        }
        try (RandomAccessFile f = new RandomAccessFile(target.toFile(), "rw")) {
            if (f.length() != 0) throw new IOException(target + " exists already");
            f.setLength(size);
        }
        return false;
    }

    /** Server side: the file of a freed value becomes free for a client to claim, or goes when the pool is full. */
    synchronized void recycle(Path file, long size, long maxPooledBytes) {
        try {
            if (size > 0 && pooledBytes() + size <= maxPooledBytes)
                Files.move(file, dir.resolve(FREE + size + "-" + SEQ.incrementAndGet()), StandardCopyOption.ATOMIC_MOVE);
            else
                Files.deleteIfExists(file);
        } catch (IOException e) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // the launcher removes the directory
            }
        }
    }

    /** Deletes free files, largest first, until at most {@code maxBytes} of them stay. */
    synchronized void trimTo(long maxBytes) {
        long pooled = pooledBytes();
        while (pooled > Math.max(0, maxBytes)) {
            Path largest = null;
            long largestSize = -1;
            try (DirectoryStream<Path> free = Files.newDirectoryStream(dir, FREE + "*")) {
                for (Path f : free) {
                    long s = sizeOf(f);
                    if (s > largestSize) {
                        largest = f;
                        largestSize = s;
                    }
                }
            } catch (IOException e) {
                return;
            }
            if (largest == null) return;
            try {
                Files.deleteIfExists(largest);
            } catch (IOException e) {
                return;
            }
            pooled -= largestSize;
        }
    }

    /** Bytes in free files now (clients claim them without telling, so this counts what is there). */
    synchronized long pooledBytes() {
        long total = 0;
        try (DirectoryStream<Path> free = Files.newDirectoryStream(dir, FREE + "*")) {
            for (Path f : free) total += sizeOf(f);
        } catch (IOException e) {
            return 0;
        }
        return total;
    }

    /** Deletes every free file (the holder is closing; held files are deleted as their values are freed). */
    synchronized void clear() { trimTo(0); }

    /** A free file's size, from its name ({@code free-<size>-<n>}). */
    private static long sizeOf(Path free) {
        String n = free.getFileName().toString();
        int dash = n.indexOf('-', FREE.length());
        try {
            return dash < 0 ? 0 : Long.parseLong(n.substring(FREE.length(), dash));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
