package dev.jtrain.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Memory the host can still give processes: Linux's MemAvailable (free plus what reclaim would free), in bytes. */
final class HostMemory {
    private HostMemory() {}

    /** MemAvailable from /proc/meminfo, or -1 where there is none (not Linux) or it cannot be read. */
    static long availableBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** This process's peak resident set (VmHWM in /proc/self/status), or -1 where it cannot be read. */
    static long peakRssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
