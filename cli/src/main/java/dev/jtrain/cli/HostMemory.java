package dev.jtrain.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What Linux reports of memory: the host's available memory and this process's peak resident set. */
final class HostMemory {
    private HostMemory() {}

    /** MemAvailable from /proc/meminfo (free plus what reclaim would free), or -1 where there is none or it cannot be read. */
    static long availableBytes() {
        return kibField(Path.of("/proc/meminfo"), "MemAvailable:");
    }

    /** This process's peak resident set (VmHWM in /proc/self/status), or -1 where it cannot be read. */
    static long peakRssBytes() {
        return kibField(Path.of("/proc/self/status"), "VmHWM:");
    }

    /** The "key: N kB" line of a /proc file, in bytes, or -1. */
    private static long kibField(Path file, String key) {
        try {
            for (String line : Files.readAllLines(file)) {
                if (line.startsWith(key)) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
