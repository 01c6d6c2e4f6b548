package dev.jtrain.comm.transport.shm;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.store.Store;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Creates and maps the rings between this rank and its shared-memory peers. Each rank creates the rings it
 * receives on (so a ring's creator is its consumer), publishes their paths in the store, maps the rings it sends
 * on, and signals "mapped". Once every peer has signalled, the rank unlinks the files it created: from then on the
 * memory lives only in the mappings, so nothing is left in {@code /dev/shm} however the processes end. On any
 * failure the created files are unlinked before the error propagates.
 *
 * <p>Threading: used once, by the thread that calls {@link ShmTransport#connect}.
 */
final class ShmBootstrap {
    /** Prefix of every ring file, so tests and operators can find leftovers. */
    static final String FILE_PREFIX = "jtrain-";

    private ShmBootstrap() { }

    record Rings(MemorySegment[] inbound, MemorySegment[] outbound) { }

    private static String key(ShmTransportOptions o, String what, int a, int b) {
        return "shm/" + o.groupId() + "/" + what + "/" + a + "/" + b;
    }

    static Rings connect(Store store, int rank, int size, boolean[] shmPeer, ShmTransportOptions o, Arena arena) {
        String nonce = HexFormat.of().formatHex(new SecureRandom().generateSeed(6));
        String safeGroup = o.groupId().replaceAll("[^A-Za-z0-9_.]", "_");
        MemorySegment[] in = new MemorySegment[size];
        MemorySegment[] out = new MemorySegment[size];
        List<Path> created = new ArrayList<>();
        long pid = ProcessHandle.current().pid();
        try {
            for (int p = 0; p < size; p++) {
                if (!shmPeer[p]) continue;
                Path path = Path.of(o.directory(), FILE_PREFIX + safeGroup + "-" + nonce + "-" + p + "to" + rank);
                try (FileChannel fc = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    created.add(path);
                    in[p] = fc.map(FileChannel.MapMode.READ_WRITE, 0, ShmRingDescriptor.fileLength(o.ringBytes()), arena);
                }
                ShmRingDescriptor.initialise(in[p], o.ringBytes(), pid);
                store.set(key(o, "ring", p, rank), path.toString().getBytes(StandardCharsets.UTF_8));
            }
            for (int p = 0; p < size; p++) {
                if (!shmPeer[p]) continue;
                String path = new String(store.get(key(o, "ring", rank, p), o.timeoutMs()), StandardCharsets.UTF_8);
                try (FileChannel fc = FileChannel.open(Path.of(path), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    out[p] = fc.map(FileChannel.MapMode.READ_WRITE, 0, fc.size(), arena);
                }
                ShmRingDescriptor.validate(out[p], path);
                out[p].set(ValueLayout.JAVA_LONG, ShmRingDescriptor.SENDER_PID_OFFSET, pid);
            }
            store.set(key(o, "mapped", rank, rank), new byte[]{1});
            List<String> peersMapped = new ArrayList<>();
            for (int p = 0; p < size; p++) if (shmPeer[p]) peersMapped.add(key(o, "mapped", p, p));
            store.wait(peersMapped, o.timeoutMs());
            return new Rings(in, out);
        } catch (IOException | RuntimeException e) {
            if (e instanceof CommException ce) {
                throw new CommException("shm transport rank " + rank + ": setting up rings failed: " + ce.getMessage(), ce);
            }
            throw new CommException("shm transport rank " + rank + ": setting up rings in " + o.directory() + " failed: " + e
                    + " (is it a writable tmpfs with room for " + ShmRingDescriptor.fileLength(o.ringBytes()) + " bytes per ring?)", e);
        } finally {
            for (Path p : created) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort; the file name carries the jtrain- prefix for manual cleanup
                }
            }
        }
    }
}
