package dev.jtrain.comm.store;

import dev.jtrain.comm.CommException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import static dev.jtrain.comm.store.StoreFrameDescriptor.*;

/**
 * A store server for bulk values (megabytes each, gigabytes in all): the launcher's holder of in-memory checkpoints.
 * It speaks the {@link TcpStoreServer} protocol, so a {@link TcpStore} is its client, but keeps every value off the
 * heap, each in a block of its own ({@link BlockPool}: recycled when a value of the same size replaces a freed one), read
 * from the socket straight into place and sent back from there. A heap store
 * copies each value twice more (socket buffer to array, and again when old arrays are compacted) and collects
 * gigabytes of retained arrays, CPU taken from the ranks on the same host (bench/MEASUREMENTS.md, "checkpoint
 * holder").
 *
 * <p>What it serves: HELLO (job token, checked in constant time), SET, ADOPT (a file a client on this host left in
 * the adoption directory becomes a value without crossing the socket), GET (never waits: an absent key answers
 * TIMEOUT at once), LOCATE (the adopted file a value is, for a client on this host to map and read instead of
 * GETting it; a value in a block answers with no file), ADD, DELETE, NUM_KEYS. CAS and WAIT are rendezvous operations and are refused. Values count
 * against {@code budgetBytes}; a SET beyond it is refused with the figures, and nothing is stored.
 *
 * <p>Threading: one platform thread per connection, blocking channel I/O; a value being sent is read-locked, so a
 * concurrent DELETE or replacing SET frees its memory only after the send.
 */
public final class BulkStoreServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(BulkStoreServer.class);

    /**
     * One value: in a block of its own (perhaps a freed value's, recycled), or an adopted file's pages mapped in place;
     * given back under the write lock, read under the read lock.
     */
    private static final class Value {
        final MemorySegment bytes;
        /** The adopted file's name in the adoption directory, or null for a value held in a block. */
        final String file;
        private final Runnable release;
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        private boolean freed; // under the write lock

        private Value(MemorySegment bytes, String file, Runnable release) {
            this.bytes = bytes;
            this.file = file;
            this.release = release;
        }

        static Value inBlock(BlockPool pool, long size) {
            BlockPool.Block block = pool.take(size);
            return new Value(block.segment(), null, () -> pool.give(block));
        }

        /** A file's pages, mapped; once unmapped (the arena closed), {@code afterUnmap} recycles or deletes the file. */
        static Value mapped(Arena arena, MemorySegment pages, String file, Runnable afterUnmap) {
            return new Value(pages, file, () -> {
                arena.close();
                afterUnmap.run();
            });
        }

        /** Gives the memory back once no send holds it; a second call (a delete racing close) does nothing. */
        void free() {
            lock.writeLock().lock();
            try {
                if (!freed) release.run();
                freed = true;
            } finally {
                lock.writeLock().unlock();
            }
        }
    }

    private final ServerSocketChannel server;
    private final byte[] token;
    private final int maxBodyBytes;
    private final long handshakeTimeoutMs;
    private final long budgetBytes;
    private final AdoptionDirectory adoptDir;
    private final Map<String, Value> values = new ConcurrentHashMap<>();
    private final AtomicLong heldBytes = new AtomicLong();
    private final AtomicLong adoptedBytes = new AtomicLong();
    private final AtomicLong servedBytes = new AtomicLong();
    /** Memory of freed values, kept for the next save's (up to half the budget: one step's worth of a typical holder). */
    private final BlockPool pool;
    private final Object counters = new Object();
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /**
     * @param host        address to bind, or {@link TcpStoreServer#ANY_ADDRESS} for every interface
     * @param budgetBytes the most value bytes it holds at once
     */
    public BulkStoreServer(String host, int port, String jobToken, int maxBodyBytes, long handshakeTimeoutMs, long budgetBytes) {
        this(host, port, jobToken, maxBodyBytes, handshakeTimeoutMs, budgetBytes, null);
    }

    /**
     * @param adoptDir where clients on this host leave files for ADOPT (a directory in shared memory that only this
     *                 job's user can write), or null to refuse ADOPT
     */
    public BulkStoreServer(String host, int port, String jobToken, int maxBodyBytes, long handshakeTimeoutMs, long budgetBytes,
                           Path adoptDir) {
        this.adoptDir = adoptDir == null ? null : new AdoptionDirectory(adoptDir);
        this.token = jobToken.getBytes(StandardCharsets.UTF_8);
        this.maxBodyBytes = maxBodyBytes;
        this.handshakeTimeoutMs = handshakeTimeoutMs;
        this.budgetBytes = budgetBytes;
        this.pool = new BlockPool(budgetBytes / 2);
        try {
            server = ServerSocketChannel.open();
            server.bind(TcpStoreServer.ANY_ADDRESS.equals(host) ? new InetSocketAddress(port) : new InetSocketAddress(host, port));
        } catch (IOException e) {
            throw new CommException("bulk store: cannot listen on " + host + ":" + port + ": " + e, e);
        }
        Thread.ofPlatform().daemon().name("jtrain-bulk-store-accept").start(this::acceptLoop);
    }

    public int port() { return server.socket().getLocalPort(); }

    /** Bytes that arrived as adopted shared-memory files rather than through a socket, since the start. */
    public long adoptedBytes() { return adoptedBytes.get(); }

    /** Value bytes sent back to GETs through a socket, since the start. */
    public long servedBytes() { return servedBytes.get(); }

    /** Value bytes held now. */
    public long heldBytes() { return heldBytes.get(); }

    private void acceptLoop() {
        while (!closed) {
            try {
                SocketChannel ch = server.accept();
                connections.add(ch);
                Thread.ofPlatform().daemon().name("jtrain-bulk-store-conn").start(() -> serve(ch));
            } catch (IOException e) {
                if (!closed) log.warn("bulk store accept failed: {}", e.toString());
            }
        }
    }

    private void serve(SocketChannel ch) {
        String who = "?";
        AtomicBoolean admitted = new AtomicBoolean();
        try (ch) {
            who = String.valueOf(ch.getRemoteAddress());
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            // a stranger that never says HELLO is dropped (blocking channels have no read timeout)
            Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(handshakeTimeoutMs);
                    if (!admitted.get()) ch.close();
                } catch (InterruptedException | IOException ignored) {
                    // gone anyway
                }
            });
            Request hello = read(ch, Math.min(maxBodyBytes, 64 * 1024), false);
            if (hello.opcode != OP_HELLO || hello.fields.size() != 2)
                throw new StoreFrame.ProtocolException("first frame must be HELLO [token, name], got opcode=" + hello.opcode);
            if (!MessageDigest.isEqual(token, hello.bytes(0))) {
                log.warn("bulk store rejected {}: wrong job token", who);
                reply(ch, STATUS_ERROR, List.of(utf8("rejected: wrong job token")));
                return;
            }
            admitted.set(true);
            reply(ch, STATUS_OK, List.of());
            while (!closed) {
                Request req;
                try {
                    req = read(ch, maxBodyBytes, true);
                } catch (EOFException eof) {
                    return;
                }
                handle(ch, req);
            }
        } catch (StoreFrame.ProtocolException e) {
            log.warn("bulk store dropped {}: protocol violation: {}", who, e.getMessage());
        } catch (IOException | RuntimeException e) {
            if (!closed && admitted.get()) log.debug("bulk store connection {} ended: {}", who, e.toString());
        } finally {
            connections.remove(ch);
        }
    }

    /** A request: small fields on the heap; a SET's value already in its own off-heap {@link Value}. */
    private record Request(byte opcode, List<Object> fields) {
        byte[] bytes(int i) { return (byte[]) fields.get(i); }

        String string(int i) { return new String(bytes(i), StandardCharsets.UTF_8); }
    }

    private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) if (ch.read(b) < 0) throw new EOFException("peer closed mid-frame");
    }

    /**
     * Reads one frame, validating lengths as {@link StoreFrame} does before allocating anything; a SET's value goes
     * off the heap only from an admitted client, and is freed if the frame turns out malformed.
     */
    private Request read(SocketChannel ch, int maxBody, boolean admitted) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER_LENGTH);
        if (ch.read(h) < 0) throw new EOFException();
        readFully(ch, h);
        h.flip();
        int magic = h.getInt();
        if (magic != MAGIC) throw new StoreFrame.ProtocolException(String.format("bad magic 0x%08x", magic));
        byte op = h.get();
        h.get(); // status: meaningless in a request
        int count = h.getShort() & 0xffff;
        int body = h.getInt();
        if (!isRequestOpcode(op)) throw new StoreFrame.ProtocolException("unknown opcode " + op);
        if (count > MAX_FIELDS || body < 0 || body > maxBody || (long) count * FIELD_LENGTH_BYTES > body)
            throw new StoreFrame.ProtocolException("bad frame: fields=" + count + ", body=" + body + " (max " + maxBody + ")");
        List<Object> fields = new ArrayList<>(count);
        try {
            readFields(ch, op, count, body, admitted, fields);
        } catch (IOException | RuntimeException e) {
            fields.forEach(f -> { if (f instanceof Value v) v.free(); });
            throw e;
        }
        return new Request(op, fields);
    }

    private void readFields(SocketChannel ch, byte op, int count, int body, boolean admitted, List<Object> fields)
            throws IOException {
        long left = body;
        ByteBuffer len = ByteBuffer.allocate(FIELD_LENGTH_BYTES);
        for (int i = 0; i < count; i++) {
            len.clear();
            readFully(ch, len);
            int n = len.flip().getInt();
            left -= FIELD_LENGTH_BYTES;
            if (n < 0 || n > left) throw new StoreFrame.ProtocolException("field " + i + " length=" + n + " exceeds the body");
            if (op == OP_SET && i == 1 && admitted) {
                Value v = Value.inBlock(pool, n);
                pool.trimTo(budgetBytes - heldBytes.get() - n); // held and kept-for-reuse within the budget together
                fields.add(v); // freed by the caller if the rest fails
                readFully(ch, v.bytes.asByteBuffer());
            } else {
                byte[] f = new byte[n];
                readFully(ch, ByteBuffer.wrap(f));
                fields.add(f);
            }
            left -= n;
        }
        if (left != 0) throw new StoreFrame.ProtocolException("body leaves " + left + " unparsed bytes");
    }

    private void handle(SocketChannel ch, Request r) throws IOException {
        try {
            dispatch(ch, r);
        } catch (StoreFrame.ProtocolException e) {
            throw e;
        } catch (RuntimeException e) { // a bad counter, an overflow: the client hears why, the connection stays
            r.fields.forEach(f -> { if (f instanceof Value v && !values.containsValue(v)) v.free(); });
            reply(ch, STATUS_ERROR, List.of(utf8("bulk store opcode " + r.opcode + " failed: " + e)));
        }
    }

    private void dispatch(SocketChannel ch, Request r) throws IOException {
        switch (r.opcode) {
            case OP_SET -> {
                need(r, 2);
                store(ch, r.string(0), (Value) r.fields.get(1));
            }
            case OP_ADOPT -> {
                need(r, 3);
                Value v;
                try {
                    v = adopt(r.string(1), StoreFrame.asLong(r.bytes(2)));
                } catch (IOException | IllegalArgumentException e) {
                    reply(ch, STATUS_ERROR, List.of(utf8("cannot adopt '" + r.string(1) + "' for key " + r.string(0) + ": " + e.getMessage())));
                    return;
                }
                store(ch, r.string(0), v);
            }
            case OP_GET -> {
                need(r, 2);
                withLiveValue(ch, "get", r.string(0), v -> {
                    servedBytes.addAndGet(v.bytes.byteSize()); // before the reply: a client that has it sees it counted
                    replyValue(ch, v.bytes);
                });
            }
            case OP_LOCATE -> {
                need(r, 1);
                withLiveValue(ch, "locate", r.string(0), v -> {
                    if (v.file == null) reply(ch, STATUS_OK, List.of());
                    else reply(ch, STATUS_OK, List.of(utf8(v.file), StoreFrame.longBytes(v.bytes.byteSize())));
                });
            }
            case OP_ADD -> {
                need(r, 2);
                long delta = StoreFrame.asLong(r.bytes(1));
                long now;
                synchronized (counters) {
                    Value old = values.get(r.string(0));
                    long was = 0;
                    if (old != null) {
                        old.lock.readLock().lock();
                        try {
                            if (!old.freed) was = Long.parseLong(new String(old.bytes.toArray(ValueLayout.JAVA_BYTE),
                                    StandardCharsets.US_ASCII));
                        } finally {
                            old.lock.readLock().unlock();
                        }
                    }
                    now = Math.addExact(was, delta);
                    byte[] digits = Long.toString(now).getBytes(StandardCharsets.US_ASCII);
                    Value v = Value.inBlock(pool, digits.length);
                    MemorySegment.copy(MemorySegment.ofArray(digits), 0, v.bytes, 0, digits.length);
                    put(r.string(0), v);
                }
                reply(ch, STATUS_OK, List.of(StoreFrame.longBytes(now)));
            }
            case OP_DELETE -> {
                need(r, 1);
                Value old = values.remove(r.string(0));
                if (old != null) {
                    heldBytes.addAndGet(-old.bytes.byteSize());
                    old.free();
                }
                reply(ch, STATUS_OK, List.of(new byte[] {(byte) (old != null ? 1 : 0)}));
            }
            case OP_NUM_KEYS -> reply(ch, STATUS_OK, List.of(StoreFrame.longBytes(values.size())));
            default -> {
                r.fields.forEach(f -> { if (f instanceof Value v) v.free(); });
                reply(ch, STATUS_ERROR, List.of(utf8("opcode " + r.opcode + " is not served by a bulk store (no CAS, no WAIT)")));
            }
        }
    }

    /** Stores {@code v} under {@code key} and answers OK, or frees it and answers why when it would pass the budget. */
    /** An answer about one value, sent while the value is read-locked. */
    @FunctionalInterface
    private interface Answer {
        void send(Value v) throws IOException;
    }

    /**
     * Sends {@code answer} about {@code key}'s value under its read lock, so a concurrent DELETE or replacing SET frees
     * it only afterwards; an absent or already freed value answers TIMEOUT at once (a bulk store never waits).
     */
    private void withLiveValue(SocketChannel ch, String op, String key, Answer answer) throws IOException {
        Value v = values.get(key);
        if (v == null) {
            reply(ch, STATUS_TIMEOUT, List.of(utf8("store " + op + " key=" + key + ": absent (a bulk store never waits)")));
            return;
        }
        v.lock.readLock().lock();
        try {
            if (v.freed) reply(ch, STATUS_TIMEOUT, List.of(utf8("store " + op + " key=" + key + ": deleted while being read")));
            else answer.send(v);
        } finally {
            v.lock.readLock().unlock();
        }
    }

    private void store(SocketChannel ch, String key, Value v) throws IOException {
        long size = v.bytes.byteSize();
        Value replaced = values.get(key);
        long freedByReplace = replaced == null ? 0 : replaced.bytes.byteSize();
        if (heldBytes.addAndGet(size - freedByReplace) > budgetBytes) {
            heldBytes.addAndGet(freedByReplace - size);
            v.free();
            reply(ch, STATUS_ERROR, List.of(utf8("holder full: a value of " + size + " bytes on top of " + heldBytes.get()
                    + " held would pass its budget of " + budgetBytes + " bytes")));
            return;
        }
        heldBytes.addAndGet(freedByReplace - size); // put() counts it
        put(key, v);
        reply(ch, STATUS_OK, List.of());
    }

    /**
     * Maps the file {@code name} of the adoption directory as a value. A client on this host wrote it there: one copy
     * into shared memory instead of two through the loopback socket, and no receive work here. The file keeps its
     * name while held; freed, it is left for a client to claim and overwrite ({@link AdoptionDirectory}).
     */
    private Value adopt(String name, long length) throws IOException {
        if (adoptDir == null) throw new IllegalArgumentException("this holder adopts no files (it has no shared-memory directory)");
        if (!AdoptionDirectory.isPlainName(name) || name.startsWith("free-"))
            throw new IllegalArgumentException("not a plain file name");
        Path file = adoptDir.dir().resolve(name);
        Arena arena = Arena.ofShared();
        try (FileChannel fc = FileChannel.open(file, StandardOpenOption.READ)) {
            long fileSize = fc.size();
            if (length < 0 || length > fileSize)
                throw new IllegalArgumentException("length " + length + " is not within the file's " + fileSize + " bytes");
            MemorySegment pages = length == 0 ? MemorySegment.NULL.reinterpret(0) : fc.map(FileChannel.MapMode.READ_ONLY, 0, length, arena);
            adoptDir.trimTo(budgetBytes - heldBytes.get() - length); // held and kept-for-reuse within the budget together
            adoptedBytes.addAndGet(length);
            return Value.mapped(arena, pages, name, () -> {
                if (closed) deleteQuietly(file);
                else adoptDir.recycle(file, fileSize, budgetBytes / 2);
            });
        } catch (IOException | RuntimeException e) {
            arena.close();
            Files.deleteIfExists(file);
            throw e;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // the launcher removes the directory
        }
    }

    /** Stores {@code v} under {@code key}; a replaced value is freed once no send holds it. */
    private void put(String key, Value v) {
        if (closed) {
            v.free();
            return;
        }
        heldBytes.addAndGet(v.bytes.byteSize());
        Value old = values.put(key, v);
        if (old != null) {
            heldBytes.addAndGet(-old.bytes.byteSize());
            old.free();
        }
    }

    private static void need(Request r, int n) throws StoreFrame.ProtocolException {
        if (r.fields.size() != n) {
            r.fields.forEach(f -> { if (f instanceof Value v) v.free(); });
            throw new StoreFrame.ProtocolException("opcode " + r.opcode + " needs " + n + " fields, got " + r.fields.size());
        }
    }

    private static byte[] utf8(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    private static void reply(SocketChannel ch, byte status, List<byte[]> fields) throws IOException {
        int body = 0;
        for (byte[] f : fields) body += FIELD_LENGTH_BYTES + f.length;
        ByteBuffer b = ByteBuffer.allocate(HEADER_LENGTH + body);
        b.putInt(MAGIC).put(OP_RESPONSE).put(status).putShort((short) fields.size()).putInt(body);
        for (byte[] f : fields) b.putInt(f.length).put(f);
        b.flip();
        while (b.hasRemaining()) ch.write(b);
    }

    /** A one-field OK reply whose field is sent from its off-heap place. */
    private static void replyValue(SocketChannel ch, MemorySegment value) throws IOException {
        ByteBuffer head = ByteBuffer.allocate(HEADER_LENGTH + FIELD_LENGTH_BYTES);
        int n = (int) value.byteSize();
        head.putInt(MAGIC).put(OP_RESPONSE).put(STATUS_OK).putShort((short) 1).putInt(FIELD_LENGTH_BYTES + n).putInt(n).flip();
        ByteBuffer[] parts = {head, value.asByteBuffer()};
        while (parts[1].hasRemaining() || head.hasRemaining()) ch.write(parts);
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (SocketChannel c : connections) {
            try {
                c.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        values.values().forEach(Value::free);
        values.clear();
        heldBytes.set(0);
        pool.close();
        if (adoptDir != null) adoptDir.clear();
    }

    /** Bytes of freed values kept for reuse (not counted as held). */
    long pooledBytes() { return pool.pooledBytes(); }

    /** {values whose memory was recycled, values that needed new memory}. */
    long[] blockCounts() { return pool.counts(); }
}
