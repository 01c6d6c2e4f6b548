package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static dev.jtrain.comm.store.StoreFrameDescriptor.*;

/**
 * The server side of {@link TcpStore}, hosted by rank 0 or by the launcher. One virtual thread per connection
 * (a job has a handful of clients, and a blocking GET simply parks its thread); state lives in an
 * {@link InMemoryStore}.
 *
 * <p>Admission: the first frame of every connection must be HELLO carrying the job token, within
 * {@code handshakeTimeoutMs}. A wrong token, garbage, an oversized length field or silence is logged and the
 * connection dropped; other connections are unaffected.
 *
 * <p>Threading: thread-safe; {@link #close} stops accepting and drops every connection.
 */
public final class TcpStoreServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TcpStoreServer.class);

    private final ServerSocket serverSocket;
    private final byte[] token;
    private final int maxBodyBytes;
    private final long handshakeTimeoutMs;
    private final InMemoryStore state = new InMemoryStore(Long.MAX_VALUE / 4);
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final AtomicLong rejected = new AtomicLong();
    private final Thread acceptor;
    private volatile boolean closed;

    /**
     * Binds {@code host:port} ({@code port} 0 picks a free port; see {@link #port()}).
     *
     * @throws CommException when the port can not be bound (in use: pick another or pass 0)
     */
    public TcpStoreServer(String host, int port, String jobToken, int maxBodyBytes, long handshakeTimeoutMs) {
        if (jobToken == null || jobToken.isEmpty()) throw new IllegalArgumentException("jobToken must be non-empty");
        this.token = jobToken.getBytes(StandardCharsets.UTF_8);
        this.maxBodyBytes = maxBodyBytes;
        this.handshakeTimeoutMs = handshakeTimeoutMs;
        try {
            serverSocket = new ServerSocket();
            serverSocket.setReuseAddress(true);
            InetSocketAddress at = host == null ? new InetSocketAddress(InetAddress.getLoopbackAddress(), port)
                    : ANY_ADDRESS.equals(host) ? new InetSocketAddress(port)
                    : new InetSocketAddress(InetAddress.getByName(host), port);
            serverSocket.bind(at, 128);
        } catch (IOException e) {
            throw new CommException("store server could not bind " + (ANY_ADDRESS.equals(host) ? "all interfaces" : host)
                    + " port " + port + ": " + e.getMessage() + "; another job may hold the port: set MASTER_PORT to a free"
                    + " one (or 0 for any, single node only)", e);
        }
        acceptor = Thread.ofPlatform().daemon().name("jtrain-store-accept-" + port()).start(this::acceptLoop);
        log.debug("store server listening on {}", serverSocket.getLocalSocketAddress());
    }

    /** Host argument meaning every interface, IPv4 and IPv6 (the wildcard address). */
    public static final String ANY_ADDRESS = "*";

    public int port() { return serverSocket.getLocalPort(); }

    /** Connections dropped for a bad token, garbage, oversized frames or handshake silence. */
    public long rejectedConnections() { return rejected.get(); }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = serverSocket.accept();
                connections.add(s);
                Thread.ofVirtual().name("jtrain-store-conn").start(() -> serve(s));
            } catch (IOException e) {
                if (!closed) log.warn("store server accept failed: {}", e.toString());
            }
        }
    }

    private void serve(Socket s) {
        String who = String.valueOf(s.getRemoteSocketAddress());
        boolean admitted = false;
        List<StoreFrame> whenGone = new ArrayList<>(); // [key, value] requests to carry out when this connection ends
        try (s) {
            s.setTcpNoDelay(true);
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, handshakeTimeoutMs));
            var in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            var out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            StoreFrame hello = StoreFrame.read(in, Math.min(maxBodyBytes, 64 * 1024));
            if (hello.opcode() != OP_HELLO || hello.fields().size() != 2) {
                throw new StoreFrame.ProtocolException("first frame must be HELLO [token, name], got opcode=" + hello.opcode());
            }
            if (!MessageDigest.isEqual(token, hello.fields().get(0))) {
                rejected.incrementAndGet();
                log.warn("store server rejected {} (client '{}'): wrong job token; is JTRAIN_JOB_TOKEN the same on every rank?",
                        who, StoreFrame.string(hello.fields().get(1)));
                StoreFrame.error(STATUS_ERROR, "rejected: wrong job token").write(out);
                return;
            }
            admitted = true;
            who = who + " (" + StoreFrame.string(hello.fields().get(1)) + ")";
            StoreFrame.ok().write(out);
            s.setSoTimeout(0); // admitted clients may idle between rendezvous steps
            while (!closed) {
                StoreFrame req;
                try {
                    req = StoreFrame.read(in, maxBodyBytes);
                } catch (EOFException eof) {
                    return; // client closed
                }
                if (req.opcode() == OP_SET_WHEN_GONE) {
                    need(req, 2);
                    whenGone.add(req);
                    StoreFrame.ok().write(out);
                } else handle(req).write(out);
            }
        } catch (StoreFrame.ProtocolException e) {
            rejected.incrementAndGet();
            log.warn("store server dropped {}: protocol violation: {}", who, e.getMessage());
        } catch (SocketTimeoutException e) {
            rejected.incrementAndGet();
            log.warn("store server dropped {}: no HELLO within {} ms", who, handshakeTimeoutMs);
        } catch (EOFException | SocketException e) {
            if (!admitted) {
                rejected.incrementAndGet();
                log.warn("store server dropped {}: connection ended before handshake ({})", who, e.toString());
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) log.warn("store server dropped {}: {}", who, e.toString());
        } finally {
            connections.remove(s);
            if (admitted && !closed) {
                for (StoreFrame w : whenGone) {
                    try {
                        state.setOwned(StoreFrame.string(w.fields().get(0)), w.fields().get(1));
                    } catch (RuntimeException e) {
                        log.warn("store server could not record that {} is gone: {}", who, e.toString());
                    }
                }
            }
        }
    }

    private StoreFrame handle(StoreFrame req) throws StoreFrame.ProtocolException {
        List<byte[]> f = req.fields();
        try {
            switch (req.opcode()) {
                case OP_SET -> {
                    need(req, 2);
                    state.setOwned(StoreFrame.string(f.get(0)), f.get(1)); // the frame's field is ours alone
                    return StoreFrame.ok();
                }
                case OP_GET -> {
                    need(req, 2);
                    return StoreFrame.ok(state.getShared(StoreFrame.string(f.get(0)), StoreFrame.asLong(f.get(1)))); // written, not kept
                }
                case OP_ADD -> {
                    need(req, 2);
                    return StoreFrame.ok(StoreFrame.longBytes(state.add(StoreFrame.string(f.get(0)), StoreFrame.asLong(f.get(1)))));
                }
                case OP_CAS -> {
                    need(req, 3);
                    return StoreFrame.ok(state.compareSet(StoreFrame.string(f.get(0)), f.get(1), f.get(2)));
                }
                case OP_WAIT -> {
                    if (f.isEmpty()) throw new StoreFrame.ProtocolException("WAIT needs [timeoutMs, keys...]");
                    List<String> keys = new ArrayList<>(f.size() - 1);
                    for (int i = 1; i < f.size(); i++) keys.add(StoreFrame.string(f.get(i)));
                    state.wait(keys, StoreFrame.asLong(f.get(0)));
                    return StoreFrame.ok();
                }
                case OP_DELETE -> {
                    need(req, 1);
                    return StoreFrame.ok(new byte[]{(byte) (state.delete(StoreFrame.string(f.get(0))) ? 1 : 0)});
                }
                case OP_NUM_KEYS -> {
                    return StoreFrame.ok(StoreFrame.longBytes(state.numKeys()));
                }
                case OP_ADOPT, OP_LOCATE -> {
                    return StoreFrame.error(STATUS_ERROR, "a rendezvous store holds no files (only a checkpoint holder does)");
                }
                default -> throw new StoreFrame.ProtocolException("unexpected opcode " + req.opcode() + " after HELLO");
            }
        } catch (CommTimeoutException e) {
            return StoreFrame.error(STATUS_TIMEOUT, e.getMessage());
        } catch (CommException | ArithmeticException e) {
            return StoreFrame.error(STATUS_ERROR, e.getMessage());
        }
    }

    private static void need(StoreFrame req, int n) throws StoreFrame.ProtocolException {
        if (req.fields().size() != n) {
            throw new StoreFrame.ProtocolException("opcode " + req.opcode() + " needs " + n + " fields, got " + req.fields().size());
        }
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            serverSocket.close();
        } catch (IOException ignored) {
            // closing; nothing to do
        }
        state.close(); // wakes handlers blocked in GET/WAIT
        for (Socket s : connections) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing
            }
        }
        try {
            acceptor.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
