package dev.jtrain.gpt.data;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The documents of a corpus source in a fixed order: one text file, the files under a directory
 * (recursive, hidden entries skipped) or the entries of a zip archive, sorted by path so the token
 * stream is identical on every machine. Binary files are filtered twice: by a list of binary
 * extensions here, and by {@link #looksBinary} (a NUL byte in the first 8 KiB, as git and grep decide).
 */
final class TextSource implements AutoCloseable {
    /** A document: its path inside the source, its size in bytes and modification time. */
    record Doc(String name, long size, long mtimeMs) {
    }

    private static final int SNIFF_BYTES = 8192;
    private static final Set<String> BINARY_EXTENSIONS = Set.of(
            "class", "jar", "zip", "gz", "tgz", "bz2", "xz", "zst", "7z", "png", "jpg", "jpeg", "gif", "bmp", "ico",
            "pdf", "so", "dll", "dylib", "exe", "bin", "o", "a", "jmod", "woff", "woff2", "ttf", "otf", "mp3", "mp4",
            "wav", "safetensors", "pt", "npy", "npz", "pkl", "db", "sqlite");

    private final String kind;
    private final Path root;
    private final ZipFile zip;
    private final List<Doc> docs;

    private TextSource(String kind, Path root, ZipFile zip, List<Doc> docs) {
        this.kind = kind;
        this.root = root;
        this.zip = zip;
        this.docs = docs;
    }

    static TextSource open(Path source, String fileGlob) {
        PathMatcher glob = FileSystems.getDefault().getPathMatcher("glob:" + fileGlob);
        try {
            if (!Files.exists(source))
                throw new IllegalArgumentException("corpus source does not exist: path=" + source.toAbsolutePath());
            if (Files.isDirectory(source)) return directory(source, glob);
            if (isArchive(source)) return zip(source, glob);
            BasicFileAttributes a = Files.readAttributes(source, BasicFileAttributes.class);
            return new TextSource("file", source, null,
                    List.of(new Doc(source.getFileName().toString(), a.size(), a.lastModifiedTime().toMillis())));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list corpus source " + source + ": " + e.getMessage(), e);
        }
    }

    private static boolean isArchive(Path file) {
        String lower = file.getFileName().toString().toLowerCase(Locale.ROOT);
        return lower.endsWith(".zip") || lower.endsWith(".jar");
    }

    private static TextSource directory(Path dir, PathMatcher glob) throws IOException {
        List<Doc> docs = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                Path rel = dir.relativize(p);
                if (rel.toString().isEmpty() || isHidden(rel) || !Files.isRegularFile(p)) continue;
                if (!accepts(p.getFileName().toString(), glob)) continue;
                BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
                docs.add(new Doc(rel.toString().replace('\\', '/'), a.size(), a.lastModifiedTime().toMillis()));
            }
        }
        docs.sort(Comparator.comparing(Doc::name));
        return new TextSource("directory", dir, null, List.copyOf(docs));
    }

    private static TextSource zip(Path file, PathMatcher glob) throws IOException {
        ZipFile zip = new ZipFile(file.toFile(), StandardCharsets.UTF_8);
        List<Doc> docs = new ArrayList<>();
        for (ZipEntry e : zip.stream().toList()) {
            if (e.isDirectory()) continue;
            String name = e.getName();
            String fileName = name.substring(name.lastIndexOf('/') + 1);
            if (fileName.isEmpty() || !accepts(fileName, glob)) continue;
            docs.add(new Doc(name, e.getSize(), e.getTime()));
        }
        docs.sort(Comparator.comparing(Doc::name));
        return new TextSource("zip", file, zip, List.copyOf(docs));
    }

    private static boolean isHidden(Path rel) {
        for (Path part : rel) if (part.toString().startsWith(".")) return true;
        return false;
    }

    private static boolean accepts(String fileName, PathMatcher glob) {
        int dot = fileName.lastIndexOf('.');
        if (dot >= 0 && BINARY_EXTENSIONS.contains(fileName.substring(dot + 1).toLowerCase(Locale.ROOT))) return false;
        return glob.matches(Path.of(fileName));
    }

    /** True if the first 8 KiB of {@code bytes[0, len)} contain a NUL byte. */
    static boolean looksBinary(byte[] bytes, int len) {
        int n = Math.min(len, SNIFF_BYTES);
        for (int i = 0; i < n; i++) if (bytes[i] == 0) return true;
        return false;
    }

    String kind() {
        return kind;
    }

    List<Doc> documents() {
        return docs;
    }

    InputStream open(Doc doc) throws IOException {
        return switch (kind) {
            case "zip" -> zip.getInputStream(zip.getEntry(doc.name()));
            case "directory" -> Files.newInputStream(root.resolve(doc.name()));
            default -> Files.newInputStream(root);
        };
    }

    /**
     * Feeds what identifies this source's content into {@code md}: the source path, and for a directory every
     * document's name, size and mtime (a directory's own mtime does not change when a file in it is edited);
     * for a file or archive its own size and mtime.
     */
    void fingerprint(MessageDigest md) throws IOException {
        if (kind.equals("directory")) {
            update(md, "kind=" + kind + "\npath=" + root.toAbsolutePath().normalize() + "\n");
            for (Doc d : docs) update(md, d.name() + "\t" + d.size() + "\t" + d.mtimeMs() + "\n");
        } else {
            fileFingerprint(kind, root, md);
        }
    }

    /**
     * The {@link #fingerprint(MessageDigest)} of what {@link #open} would give, without opening a file or an archive:
     * a prepared corpus is then found with a stat, instead of reading an archive's directory and matching each entry's
     * name, interpreted, in the cold JVM of a rank that was just restarted (bench/MEASUREMENTS.md, "Compile work and
     * cold code of a restarted rank"). A directory is still listed: its documents are its identity.
     */
    static void fingerprint(Path source, String fileGlob, MessageDigest md) throws IOException {
        if (Files.isDirectory(source)) {
            try (TextSource s = open(source, fileGlob)) {
                s.fingerprint(md);
            }
            return;
        }
        if (!Files.exists(source))
            throw new IllegalArgumentException("corpus source does not exist: path=" + source.toAbsolutePath());
        fileFingerprint(isArchive(source) ? "zip" : "file", source, md);
    }

    private static void fileFingerprint(String kind, Path file, MessageDigest md) throws IOException {
        update(md, "kind=" + kind + "\npath=" + file.toAbsolutePath().normalize() + "\n");
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
        update(md, "size=" + a.size() + "\nmtime=" + a.lastModifiedTime().toMillis() + "\n");
    }

    private static void update(MessageDigest md, String s) {
        md.update(s.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
        if (zip != null) {
            try {
                zip.close();
            } catch (IOException ignored) {
                // read-only; nothing to lose
            }
        }
    }
}
