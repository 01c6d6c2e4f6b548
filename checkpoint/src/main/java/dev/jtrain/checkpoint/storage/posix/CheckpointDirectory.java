package dev.jtrain.checkpoint.storage.posix;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The file layout of checkpoints on a POSIX file system, under a checkpoint root:
 * <pre>
 *   root/
 *     latest                     "step-000123\n", replaced atomically after a commit
 *     step-000100/               one directory per checkpoint
 *       rank-00000.safetensors   what rank 0 wrote (safetensors layout)
 *       rank-00001.safetensors
 *       metadata.json            written last, by the coordinator: its presence = committed
 *     step-000123/ ...
 * </pre>
 * Retention (keep-last-K) deletes only committed checkpoints older than the K newest, and incomplete directories
 * older than the newest committed one; the newest committed checkpoint is never deleted.
 *
 * <p>Lookups that fail throw {@link IOException}s naming the file; the checkpoint wraps them into its own errors.
 */
public final class CheckpointDirectory {
    /** The file in a checkpoint root naming the latest committed step directory. */
    public static final String LATEST = "latest";
    /** The metadata file of a step directory; its presence is the commit. */
    public static final String METADATA = "metadata.json";
    private static final Pattern STEP = Pattern.compile("step-(\\d+)");

    private CheckpointDirectory() {}

    public static Path stepDir(Path root, long step) {
        return root.resolve(String.format("step-%06d", step));
    }

    /** The step a directory name stands for, if it is a step directory. */
    public static OptionalLong stepOf(Path dir) {
        Matcher m = STEP.matcher(dir.getFileName().toString());
        return m.matches() ? OptionalLong.of(Long.parseLong(m.group(1))) : OptionalLong.empty();
    }

    public static boolean isCommitted(Path stepDir) {
        return Files.isRegularFile(stepDir.resolve(METADATA));
    }

    /** Every step directory, oldest first (committed or not). */
    public static List<Path> steps(Path root) throws IOException {
        if (!Files.isDirectory(root)) return List.of();
        try (Stream<Path> s = Files.list(root)) {
            List<Path> out = new ArrayList<>(s.filter(p -> Files.isDirectory(p) && stepOf(p).isPresent()).toList());
            out.sort(Comparator.comparingLong(p -> stepOf(p).getAsLong()));
            return out;
        } catch (IOException e) {
            throw new IOException("cannot list checkpoint root " + root + ": " + e, e);
        }
    }

    /** The directory {@code latest} names, if the pointer exists. */
    public static Optional<Path> latest(Path root) throws IOException {
        String name;
        try {
            name = Files.readString(root.resolve(LATEST), StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new IOException("cannot read " + root.resolve(LATEST) + ": " + e, e);
        }
        if (stepOf(Path.of(name)).isEmpty())
            throw new IOException("pointer " + root.resolve(LATEST) + " holds '" + name + "', not a step directory name");
        return Optional.of(root.resolve(name));
    }

    /** The checkpoint to load: {@code step} if ≥ 0, else the one {@code latest} names, else the newest committed. */
    public static Path resolve(Path root, long step) throws IOException {
        if (isCommitted(root) || stepOf(root.toAbsolutePath()).isPresent()) return root; // a step directory was given directly
        if (step >= 0) return stepDir(root, step);
        var l = latest(root);
        if (l.isPresent()) return l.get();
        List<Path> all = steps(root);
        for (int i = all.size() - 1; i >= 0; i--) if (isCommitted(all.get(i))) return all.get(i);
        throw new NoSuchFileException(root.toString(), null, "no committed checkpoint here (no '" + LATEST
                + "' pointer, no step-*/" + METADATA + ")");
    }
}
