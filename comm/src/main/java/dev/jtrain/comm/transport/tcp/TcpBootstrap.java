package dev.jtrain.comm.transport.tcp;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import dev.jtrain.comm.store.Store;
import dev.jtrain.comm.topology.HostIdentity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static dev.jtrain.comm.transport.tcp.TcpWireDescriptor.*;

/**
 * Builds the full mesh: every rank listens, publishes {@code host:port} in the store, connects to every lower
 * rank and accepts every higher one (so each pair has exactly one connection and no two ranks wait on each other).
 * Accepted connections must present the handshake of {@link TcpWireDescriptor}; strangers are logged and dropped
 * while the rank keeps accepting. The listening socket is closed as soon as the mesh is complete.
 *
 * <p>Threading: used by one thread during {@link TcpTransport#connect}; each accepted connection's handshake is read
 * on its own virtual thread so that a silent stranger can not delay the real peers.
 */
final class TcpBootstrap {
    private static final Logger log = LoggerFactory.getLogger(TcpBootstrap.class);

    private final int rank;
    private final int size;
    private final TcpTransportOptions options;
    private final byte[] token;
    private final byte[] groupId;
    final AtomicLong rejected = new AtomicLong();

    TcpBootstrap(int rank, int size, TcpTransportOptions options) {
        this.rank = rank;
        this.size = size;
        this.options = options;
        this.token = options.jobToken().getBytes(StandardCharsets.UTF_8);
        this.groupId = options.groupId().getBytes(StandardCharsets.UTF_8);
    }

    static String addressKey(String groupId, int rank) { return "tcp/" + groupId + "/addr/" + rank; }

    static String hostKey(String groupId, int rank) { return "tcp/" + groupId + "/hostname/" + rank; }

    /**
     * How errors name each peer: its rank, host name and address ({@code peer=3 host=jt-node2/10.231.0.2}), so that
     * a failure across hosts says which machine to look at. Read after the mesh is complete (every rank published its
     * name before connecting).
     */
    String[] peerNames(Store store, SocketChannel[] peers) {
        String[] names = new String[size];
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            String host = "?"; // every rank publishes its name before connecting: absent only for a hand-made peer
            try {
                host = new String(store.get(hostKey(options.groupId(), p), 1), StandardCharsets.UTF_8);
            } catch (CommTimeoutException absent) {
                // keep "?"
            }
            String addr = "?";
            try {
                addr = ((InetSocketAddress) peers[p].getRemoteAddress()).getAddress().getHostAddress();
            } catch (IOException | RuntimeException e) {
                // closed already: the first call on it reports that
            }
            names[p] = "peer=" + p + " host=" + host + "/" + addr;
        }
        return names;
    }

    /** Returns one connected channel per peer (null at {@code rank}), in blocking mode, handshake done. */
    SocketChannel[] connectAll(Store store) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(options.timeoutMs());
        SocketChannel[] peers = new SocketChannel[size];
        try (ServerSocketChannel server = ServerSocketChannel.open(); Selector selector = Selector.open()) {
            if (options.socketBufferBytes() > 0) server.setOption(StandardSocketOptions.SO_RCVBUF, options.socketBufferBytes());
            server.bind(new InetSocketAddress(options.bindHost(), 0), Math.max(16, size));
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            store.set(hostKey(options.groupId(), rank), HostIdentity.name().getBytes(StandardCharsets.UTF_8));
            store.set(addressKey(options.groupId(), rank), (options.advertiseHost() + ":" + port).getBytes(StandardCharsets.UTF_8));
            for (int p = 0; p < rank; p++) peers[p] = connectTo(store, p, deadline);
            acceptHigher(server, selector, peers, deadline);
            return peers;
        } catch (IOException | RuntimeException e) {
            for (SocketChannel c : peers) closeQuietly(c);
            if (e instanceof CommException ce) throw ce;
            throw new CommException("tcp transport rank " + rank + ": building the connection mesh failed: " + e, e);
        }
    }

    private long leftMs(long deadline) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
            throw new CommTimeoutException("tcp transport rank " + rank + " of " + size + ": mesh not complete within "
                    + options.timeoutMs() + " ms; check that every rank started and can reach the others");
        }
        return left;
    }

    private SocketChannel connectTo(Store store, int peer, long deadline) throws IOException {
        String addr = new String(store.get(addressKey(options.groupId(), peer), leftMs(deadline)), StandardCharsets.UTF_8);
        int colon = addr.lastIndexOf(':');
        var target = new InetSocketAddress(addr.substring(0, colon), Integer.parseInt(addr.substring(colon + 1)));
        SocketChannel ch = SocketChannel.open();
        try {
            configure(ch);
            ch.socket().connect(target, (int) Math.min(Integer.MAX_VALUE, leftMs(deadline)));
            var out = new DataOutputStream(ch.socket().getOutputStream());
            out.writeInt(HANDSHAKE_MAGIC);
            out.writeShort(VERSION);
            out.writeShort(token.length);
            out.writeShort(groupId.length);
            out.writeShort(0);
            out.writeInt(rank);
            out.writeInt(size);
            out.write(token);
            out.write(groupId);
            out.flush();
            ch.socket().setSoTimeout((int) Math.min(Integer.MAX_VALUE, leftMs(deadline)));
            var in = new DataInputStream(ch.socket().getInputStream());
            int magic = in.readInt();
            int status = in.readInt();
            ch.socket().setSoTimeout(0);
            if (magic != HANDSHAKE_MAGIC || status != ACCEPTED) {
                throw new CommException("tcp transport rank " + rank + ": peer rank " + peer + " at " + addr
                        + " refused our handshake (status=" + status + "); job token or group id differ between ranks");
            }
            return ch;
        } catch (SocketTimeoutException e) {
            closeQuietly(ch);
            throw new CommTimeoutException("tcp transport rank " + rank + ": no handshake reply from peer rank " + peer + " at " + addr, e);
        } catch (IOException | RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    private void configure(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (options.socketBufferBytes() > 0) {
            ch.setOption(StandardSocketOptions.SO_SNDBUF, options.socketBufferBytes());
            ch.setOption(StandardSocketOptions.SO_RCVBUF, options.socketBufferBytes());
        }
    }

    private void acceptHigher(ServerSocketChannel server, Selector selector, SocketChannel[] peers, long deadline) throws IOException {
        int expected = size - 1 - rank;
        if (expected == 0) return;
        server.configureBlocking(false);
        server.register(selector, SelectionKey.OP_ACCEPT);
        Object lock = new Object();
        int[] admitted = {0};
        while (true) {
            synchronized (lock) {
                if (admitted[0] == expected) return;
            }
            selector.select(Math.min(50, leftMs(deadline)));
            selector.selectedKeys().clear();
            SocketChannel ch;
            while ((ch = server.accept()) != null) {
                SocketChannel accepted = ch;
                Thread.ofVirtual().name("jtrain-tcp-handshake").start(() -> {
                    int peer = handshake(accepted, peers, lock);
                    if (peer >= 0) {
                        synchronized (lock) {
                            admitted[0]++;
                        }
                    }
                });
            }
        }
    }

    /** Reads and checks one handshake; returns the admitted rank, or -1 after logging and closing a stranger. */
    private int handshake(SocketChannel ch, SocketChannel[] peers, Object lock) {
        String who = "?";
        try {
            who = String.valueOf(ch.getRemoteAddress());
            ch.configureBlocking(true);
            configure(ch);
            ch.socket().setSoTimeout((int) options.handshakeTimeoutMs());
            InputStream raw = ch.socket().getInputStream();
            var in = new DataInputStream(raw);
            int magic = in.readInt();
            if (magic != HANDSHAKE_MAGIC) return reject(ch, who, String.format("bad magic 0x%08x", magic));
            int version = in.readUnsignedShort();
            int tokenLen = in.readUnsignedShort();
            int groupLen = in.readUnsignedShort();
            in.readUnsignedShort();
            int peer = in.readInt();
            int peerSize = in.readInt();
            if (version != VERSION) return reject(ch, who, "version " + version + " (expected " + VERSION + ")");
            if (tokenLen > MAX_TOKEN_BYTES || groupLen > MAX_GROUP_ID_BYTES) {
                return reject(ch, who, "oversized lengths tokenLength=" + tokenLen + " groupIdLength=" + groupLen);
            }
            byte[] theirToken = in.readNBytes(tokenLen);
            byte[] theirGroup = in.readNBytes(groupLen);
            if (theirToken.length != tokenLen || theirGroup.length != groupLen) return reject(ch, who, "truncated handshake");
            if (!MessageDigest.isEqual(token, theirToken)) return reject(ch, who, "wrong job token");
            if (!MessageDigest.isEqual(groupId, theirGroup)) {
                return reject(ch, who, "group id '" + new String(theirGroup, StandardCharsets.UTF_8) + "' is not '" + options.groupId() + "'");
            }
            if (peerSize != size || peer <= rank || peer >= size) {
                return reject(ch, who, "claims rank " + peer + " of " + peerSize + " (this is rank " + rank + " of " + size + ")");
            }
            synchronized (lock) {
                if (peers[peer] != null) return reject(ch, who, "rank " + peer + " is already connected");
                peers[peer] = ch;
            }
            ch.socket().setSoTimeout(0);
            var out = new DataOutputStream(ch.socket().getOutputStream());
            out.writeInt(HANDSHAKE_MAGIC);
            out.writeInt(ACCEPTED);
            out.flush();
            log.debug("tcp transport rank {}: admitted peer rank {} from {}", rank, peer, who);
            return peer;
        } catch (IOException | RuntimeException e) {
            return reject(ch, who, "handshake failed: " + e);
        }
    }

    private int reject(SocketChannel ch, String who, String why) {
        rejected.incrementAndGet();
        log.warn("tcp transport rank {}: rejected connection from {}: {}", rank, who, why);
        try {
            var out = new DataOutputStream(ch.socket().getOutputStream());
            out.writeInt(HANDSHAKE_MAGIC);
            out.writeInt(REJECTED);
            out.flush();
        } catch (IOException | RuntimeException ignored) {
            // the stranger may be gone already
        }
        closeQuietly(ch);
        return -1;
    }

    static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception ignored) {
            // best effort
        }
    }
}
