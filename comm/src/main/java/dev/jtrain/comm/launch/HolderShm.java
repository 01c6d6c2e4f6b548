package dev.jtrain.comm.launch;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The launcher's directory in shared memory ({@code /dev/shm}) where its ranks leave checkpoint chunks for its holder
 * to adopt (the holder's values and the freed files kept for reuse, {@code comm.store.AdoptionDirectory}). It is
 * removed with everything in it when the launcher ends, on SIGTERM too; if the launcher itself was SIGKILLed, the
 * next launcher on the host removes it (the owner's pid is in the name). A host that went down took it with it.
 */
final class HolderShm {
    private HolderShm() {}

    static final Path SHARED_MEMORY = Path.of("/dev/shm");
    private static final Pattern NAME = Pattern.compile("jtrain-holder-(\\d+)-.*");

    /**
     * A fresh directory only this user can use, or null when the host has no shared memory, or less free there than
     * the holder may hold (a container's default /dev/shm is 64 MiB): then chunks go through the loopback socket, and
     * a line on {@code out} says why.
     */
    static Path create(PrintStream out, long holderBudget) {
        if (!Files.isDirectory(SHARED_MEMORY) || !Files.isWritable(SHARED_MEMORY)) return null;
        sweepOrphans();
        try {
            long free = Files.getFileStore(SHARED_MEMORY).getUsableSpace();
            if (free < holderBudget) {
                out.printf("[launcher] %s has %d MiB free, less than the checkpoint holder may hold (%d MiB): local shards go"
                        + " through the loopback socket (give it more, e.g. an emptyDir with medium Memory on Kubernetes)%n",
                        SHARED_MEMORY, free >> 20, holderBudget >> 20);
                return null;
            }
        } catch (IOException e) {
            return null;
        }
        try {
            return Files.createTempDirectory(SHARED_MEMORY, "jtrain-holder-" + ProcessHandle.current().pid() + "-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (IOException | UnsupportedOperationException e) {
            out.printf("[launcher] no shared-memory directory for in-memory checkpoints (%s): local shards go through the"
                    + " loopback socket%n", e.getMessage());
            return null;
        }
    }

    /** Removes {@code dir} and what is left in it; null does nothing; never throws. */
    static void remove(Path dir) {
        if (dir == null) return;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) Files.deleteIfExists(f);
            Files.deleteIfExists(dir);
        } catch (IOException ignored) {
            // a leftover directory is swept by the next launcher on this host
        }
    }

    /** Directories of launchers that no longer run (killed before they could remove theirs). */
    private static void sweepOrphans() {
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(SHARED_MEMORY, "jtrain-holder-*")) {
            for (Path d : dirs) {
                Matcher m = NAME.matcher(d.getFileName().toString());
                if (m.matches() && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()) remove(d);
            }
        } catch (IOException | NumberFormatException ignored) {
            // nothing to sweep, or not ours to read
        }
    }
}
