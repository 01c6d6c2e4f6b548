package dev.jtrain.tensor.io;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** No silent weakening of the durable-write recipe: no copying fallback, no ignored directory fsync. */
class DurableFilesTest {
    @TempDir
    Path dir;

    @Test
    void renameReplacesTheTargetAtomically() throws IOException {
        Path tmp = Files.writeString(dir.resolve(".x.tmp"), "new"), target = Files.writeString(dir.resolve("x"), "old");
        DurableFiles.moveAtomically(tmp, target);
        DurableFiles.fsyncDirectory(dir);
        assertThat(Files.readString(target)).isEqualTo("new");
        assertThat(tmp).doesNotExist();
    }

    /** Across file systems a rename can not be atomic: refused, naming both paths, and nothing half-copied. */
    @Test
    void aMoveThatCannotBeAtomicIsRefusedInsteadOfCopied() throws IOException {
        Path shm = Path.of("/dev/shm");
        Assumptions.assumeTrue(Files.isDirectory(shm) && !Files.getFileStore(shm).equals(Files.getFileStore(dir)),
                "needs /dev/shm on another file system than the temporary directory (Linux tmpfs)");
        Path tmp = Files.writeString(Files.createTempFile(shm, "jtrain-durable", ".tmp"), "payload");
        try {
            Path target = dir.resolve("x");
            assertThatThrownBy(() -> DurableFiles.moveAtomically(tmp, target))
                    .isInstanceOf(IOException.class).hasMessageContaining(tmp.toString()).hasMessageContaining(target.toString())
                    .hasMessageContaining("atomically");
            assertThat(target).doesNotExist();
            assertThat(tmp).exists();
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    @Test
    void aDirectoryThatCannotBeSyncedIsAnError() {
        Path gone = dir.resolve("not-there");
        assertThatThrownBy(() -> DurableFiles.fsyncDirectory(gone)).isInstanceOf(IOException.class).hasMessageContaining(gone.toString());
    }
}
