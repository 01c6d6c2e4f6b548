package dev.jtrain.comm.topology;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

/** This host's name, and its identity: the name plus the kernel's boot id (containers may share a name, not a kernel). */
public final class HostIdentity {
    private HostIdentity() {}

    public static String name() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown-host";
        }
    }

    public static String identity() {
        String boot = "";
        try {
            boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException | RuntimeException ignored) {
            // not Linux: the host name alone decides
        }
        return name() + "/" + boot;
    }
}
