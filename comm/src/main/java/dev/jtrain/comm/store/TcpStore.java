package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import dev.jtrain.comm.CommTimeoutException;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

import static dev.jtrain.comm.store.StoreFrameDescriptor.*;

/**
 * A {@link Store} client over one TCP connection to a {@link TcpStoreServer}; when created with
 * {@code isServer} it also hosts that server and stops it on {@link #close}.
 *
 * <p>Threading: thread-safe; requests on one client are serialised (a blocking {@link #get} holds the connection).
 */
public final class TcpStore implements Store {
    /** Extra time the client waits beyond a server-side timeout, so the server's TIMEOUT reply arrives first. */
    private static final long REPLY_GRACE_MS = 5_000;

    private final TcpStoreOptions options;
    private final TcpStoreServer server;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile boolean closed;
    private volatile boolean broken;

    /** Connects (retrying until {@code timeoutMs} while the server comes up), hosting the server first if asked. */
    public static TcpStore create(TcpStoreOptions options) { return new TcpStore(options); }

    private TcpStore(TcpStoreOptions options) {
        this.options = options;
        this.server = options.isServer()
                ? new TcpStoreServer(options.serverBindHost(), options.port(), options.jobToken(), options.maxBodyBytes(), 10_000)
                : null;
        int port = server != null ? server.port() : options.port();
        try {
            this.socket = connectWithRetry(options.host(), port, options.timeoutMs());
            socket.setTcpNoDelay(true);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
            String name = ProcessHandle.current().pid() + "@" + InetAddress.getLocalHost().getHostName();
            call(StoreFrame.request(OP_HELLO, StoreFrame.utf8(options.jobToken()), StoreFrame.utf8(name)), "hello", "-", options.timeoutMs());
        } catch (IOException | RuntimeException e) {
            if (server != null) server.close();
            if (e instanceof CommException ce) throw ce;
            throw new CommException("store connect to " + options.host() + ":" + port + " failed: " + e, e);
        }
    }

    private static Socket connectWithRetry(String host, int port, long timeoutMs) throws IOException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        long backoffMs = 10;
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), (int) Math.max(1, Math.min(timeoutMs, 5_000)));
                return s;
            } catch (IOException e) {
                s.close();
                if (System.nanoTime() > deadline) {
                    throw new CommTimeoutException("store at " + host + ":" + port + " not reachable within " + timeoutMs
                            + " ms (" + e.getMessage() + "); is rank 0 / the launcher up and MASTER_ADDR/MASTER_PORT right?", e);
                }
                try {
                    Thread.sleep(backoffMs);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new CommException("store connect interrupted", ie);
                }
                backoffMs = Math.min(500, backoffMs * 2);
            }
        }
    }

    /** The port of the hosted server, or of the server connected to. */
    public int port() { return server != null ? server.port() : options.port(); }

    /** The hosted server, or null when this is only a client. */
    public TcpStoreServer server() { return server; }

    private List<byte[]> call(StoreFrame req, String op, String key, long replyWithinMs) {
        lock.lock();
        try {
            if (closed) throw new CommException("store " + op + " key=" + key + ": store is closed");
            if (broken) {
                throw new CommException("store " + op + " key=" + key + ": connection to " + options.host() + ":" + port()
                        + " was dropped after an earlier failure; the job must restart its rendezvous");
            }
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.min(replyWithinMs, Integer.MAX_VALUE) + REPLY_GRACE_MS));
            req.write(out);
            StoreFrame resp = StoreFrame.read(in, options.maxBodyBytes());
            if (resp.opcode() != OP_RESPONSE) throw new CommException("store " + op + " key=" + key + ": server sent opcode " + resp.opcode());
            if (resp.status() == STATUS_OK) return resp.fields();
            // only an error's first field is its message: an OK reply's may be megabytes of binary value
            String msg = resp.fields().isEmpty() ? "" : StoreFrame.string(resp.fields().get(0));
            if (resp.status() == STATUS_TIMEOUT) throw new CommTimeoutException(msg);
            throw new CommException("store " + op + " key=" + key + " failed at " + options.host() + ":" + port() + ": " + msg);
        } catch (SocketTimeoutException e) {
            dropConnection(); // a late reply would be read as the answer to the next request
            throw new CommTimeoutException("store " + op + " key=" + key + ": no reply from " + options.host() + ":" + port()
                    + " within " + (replyWithinMs + REPLY_GRACE_MS) + " ms", e);
        } catch (IOException e) {
            dropConnection();
            throw new CommException("store " + op + " key=" + key + ": connection to " + options.host() + ":" + port()
                    + " failed (" + e + "); the store host (rank 0 or launcher) may have exited", e);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void set(String key, byte[] value) {
        call(StoreFrame.request(OP_SET, StoreFrame.utf8(key), value), "set", key, options.timeoutMs());
    }

    @Override
    public byte[] get(String key, long timeoutMs) {
        return call(StoreFrame.request(OP_GET, StoreFrame.utf8(key), StoreFrame.longBytes(timeoutMs)), "get", key, timeoutMs).get(0);
    }

    @Override
    public long add(String key, long delta) {
        List<byte[]> r = call(StoreFrame.request(OP_ADD, StoreFrame.utf8(key), StoreFrame.longBytes(delta)), "add", key, options.timeoutMs());
        try {
            return StoreFrame.asLong(r.get(0));
        } catch (StoreFrame.ProtocolException e) {
            throw new CommException("store add key=" + key + ": bad reply: " + e.getMessage(), e);
        }
    }

    @Override
    public byte[] compareSet(String key, byte[] expected, byte[] desired) {
        return call(StoreFrame.request(OP_CAS, StoreFrame.utf8(key), expected, desired), "compareSet", key, options.timeoutMs()).get(0);
    }

    @Override
    public void wait(List<String> keys, long timeoutMs) {
        List<byte[]> fields = new ArrayList<>(keys.size() + 1);
        fields.add(StoreFrame.longBytes(timeoutMs));
        for (String k : keys) fields.add(StoreFrame.utf8(k));
        call(StoreFrame.request(OP_WAIT, fields.toArray(byte[][]::new)), "wait", keys.toString(), timeoutMs);
    }

    @Override
    public boolean delete(String key) {
        return call(StoreFrame.request(OP_DELETE, StoreFrame.utf8(key)), "delete", key, options.timeoutMs()).get(0)[0] == 1;
    }

    @Override
    public void setWhenGone(String key, byte[] value) {
        call(StoreFrame.request(OP_SET_WHEN_GONE, StoreFrame.utf8(key), value), "setWhenGone", key, options.timeoutMs());
    }

    /**
     * Makes the first {@code length} bytes of the file {@code fileName}, which this process wrote into the server's
     * adoption directory on the same host, {@code key}'s value; the server maps its pages and keeps the file until the
     * value is freed ({@link AdoptionDirectory}). Only a {@link BulkStoreServer} with an adoption directory serves it.
     */
    public void adopt(String key, String fileName, long length) {
        call(StoreFrame.request(OP_ADOPT, StoreFrame.utf8(key), StoreFrame.utf8(fileName), StoreFrame.longBytes(length)), "adopt", key,
                options.timeoutMs());
    }

    /** Where a value of a bulk holder on this host lies: {@code file} in its adoption directory, {@code length} bytes. */
    public record Located(String file, long length) {}

    /**
     * The adopted file holding {@code key}'s value on a {@link BulkStoreServer} (to map and read on the holder's host
     * instead of receiving it through the socket); empty when the value is not a file (it arrived through a socket).
     *
     * @throws CommTimeoutException when the key is absent (never waits)
     */
    public Optional<Located> locate(String key) {
        List<byte[]> f = call(StoreFrame.request(OP_LOCATE, StoreFrame.utf8(key)), "locate", key, options.timeoutMs());
        if (f.isEmpty()) return Optional.empty();
        try {
            return Optional.of(new Located(new String(f.get(0), StandardCharsets.UTF_8), StoreFrame.asLong(f.get(1))));
        } catch (StoreFrame.ProtocolException | IndexOutOfBoundsException e) {
            throw new CommException("store locate key=" + key + ": bad reply: " + e.getMessage(), e);
        }
    }

    @Override
    public long numKeys() {
        try {
            return StoreFrame.asLong(call(StoreFrame.request(OP_NUM_KEYS), "numKeys", "-", options.timeoutMs()).get(0));
        } catch (StoreFrame.ProtocolException e) {
            throw new CommException("store numKeys: bad reply: " + e.getMessage(), e);
        }
    }

    @Override public long timeoutMs() { return options.timeoutMs(); }

    @Override public String localAddress() { return socket.getLocalAddress().getHostAddress(); }

    /** After a failed exchange the stream position is unknown: later calls must fail rather than misread replies. */
    private void dropConnection() {
        broken = true;
        try {
            socket.close();
        } catch (IOException ignored) {
            // already failing
        }
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            socket.close(); // also unblocks a thread waiting in call()
        } catch (IOException ignored) {
            // closing
        }
        if (server != null) server.close();
    }
}
