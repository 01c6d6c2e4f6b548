package dev.jtrain.comm.transport;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.topology.HostIdentity;
import dev.jtrain.comm.transport.shm.ShmTransport;
import dev.jtrain.comm.transport.shm.ShmTransportOptions;
import dev.jtrain.comm.transport.tcp.TcpTransport;
import dev.jtrain.comm.transport.tcp.TcpTransportOptions;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.util.Collections;

/**
 * Builds the transport of one rank, choosing per peer: shared memory for peers on the same host (same host name
 * and kernel boot id, both published in the store), TCP otherwise. {@link TransportOptions#kind()} {@code tcp} or
 * {@code shm} overrides the choice; {@code shm} with a peer on another host is refused rather than silently degraded.
 *
 * <p>Every rank of the group must call {@link #create} (it is collective over the store).
 */
public final class Transports {
    private Transports() { }

    public static Transport create(TransportOptions options, Store store, int rank, int size) {
        if (size < 1 || rank < 0 || rank >= size) throw new IllegalArgumentException("bad rank/size: rank=" + rank + " size=" + size);
        // Each rank counts its own creations of this group: calling create again on the same store (a rebuilt
        // group, a test) then uses fresh keys instead of meeting the addresses and ring files of the last one.
        long generation = store.add("transport/" + options.groupId() + "/created/" + rank, 1);
        options = options.withGroupId(options.groupId() + "." + generation);
        String kind = options.kind();
        String me = HostIdentity.identity();
        store.set(hostKey(options, rank), me.getBytes(StandardCharsets.UTF_8));
        UnexpectedBudget budget = new UnexpectedBudget(options.maxUnexpectedBytes()); // one for all links of this rank
        boolean[] sameHost = new boolean[size];
        int local = 0;
        for (int p = 0; p < size; p++) {
            String theirs = new String(store.get(hostKey(options, p), options.timeoutMs()), StandardCharsets.UTF_8);
            sameHost[p] = theirs.equals(me);
            if (sameHost[p]) local++;
        }
        if (kind.equals("shm") && local != size) {
            throw new CommException("transport rank " + rank + ": JTRAIN_TRANSPORT/kind=shm but only " + local + " of "
                    + size + " ranks run on this host (" + me + "); use auto or tcp");
        }
        if (size == 1 || kind.equals("shm") || (kind.equals("auto") && local == size)) return shm(options, store, rank, size, sameHost, budget);
        if (kind.equals("tcp") || local == 1) return tcp(options, store, rank, size, local == size, budget);
        ShmTransport shm = shm(options, store, rank, size, sameHost, budget);
        try {
            return new HybridTransport(shm, tcp(options, store, rank, size, false, budget), sameHost);
        } catch (RuntimeException e) {
            shm.close();
            throw e;
        }
    }

    private static ShmTransport shm(TransportOptions o, Store store, int rank, int size, boolean[] peers, UnexpectedBudget budget) {
        var so = new ShmTransportOptions(o.groupId(), o.timeoutMs(), o.shmRingBytes(), null);
        return ShmTransport.connect(store, rank, size, peers, so, budget);
    }

    private static TcpTransport tcp(TransportOptions o, Store store, int rank, int size, boolean allOnThisHost, UnexpectedBudget budget) {
        String bind = o.bindHost(), advertise = o.advertiseHost();
        if (bind == null && !allOnThisHost) {
            // Other hosts must reach us: listen everywhere and advertise the address that reaches the store's
            // host (unless the options name one: JTRAIN_ADVERTISE_ADDR, for hosts with several networks).
            bind = "0.0.0.0";
            if (advertise == null) advertise = reachableAddress(store);
        }
        var to = new TcpTransportOptions(bind, advertise, o.jobToken(), o.groupId(), o.timeoutMs(), 0, 0);
        return TcpTransport.connect(store, rank, size, to, budget);
    }



    /**
     * The address other hosts can dial this one at: the one that reaches the store's host, or, when that connection
     * went over loopback (this process shares a host with the store, reached through a name a Debian hosts file maps
     * to 127.0.1.1), {@link #networkAddress}.
     */
    public static String reachableAddress(Store store) {
        String a = store.localAddress();
        return a == null || isLoopback(a) ? networkAddress() : a;
    }

    private static boolean isLoopback(String address) {
        try {
            return InetAddress.getByName(address).isLoopbackAddress();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * An address other hosts can dial when the store connection went over loopback (this rank shares a host with the
     * store, reached through a name a Debian hosts file maps to 127.0.1.1): the first IPv4 address of an interface
     * that is up and not loopback, else the host name.
     */
    private static String networkAddress() {
        try {
            for (var nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!nif.isUp() || nif.isLoopback()) continue;
                for (var a : Collections.list(nif.getInetAddresses())) {
                    if (a instanceof Inet4Address && !a.isLinkLocalAddress()) return a.getHostAddress();
                }
            }
        } catch (IOException e) {
            // fall through to the name
        }
        return HostIdentity.name();
    }

    private static String hostKey(TransportOptions o, int rank) { return "transport/" + o.groupId() + "/host/" + rank; }


}
