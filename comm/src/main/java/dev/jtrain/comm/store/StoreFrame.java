package dev.jtrain.comm.store;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static dev.jtrain.comm.store.StoreFrameDescriptor.*;

/** One decoded frame of the store protocol (layout in {@link StoreFrameDescriptor}); immutable. */
record StoreFrame(byte opcode, byte status, List<byte[]> fields) {

    /** The peer broke the protocol; the connection must be dropped. */
    static final class ProtocolException extends IOException {
        ProtocolException(String message) { super(message); }
    }

    static StoreFrame request(byte opcode, byte[]... fields) { return new StoreFrame(opcode, STATUS_OK, List.of(fields)); }

    static StoreFrame ok(byte[]... fields) { return new StoreFrame(OP_RESPONSE, STATUS_OK, List.of(fields)); }

    static StoreFrame error(byte status, String message) {
        return new StoreFrame(OP_RESPONSE, status, List.of(message.getBytes(StandardCharsets.UTF_8)));
    }

    static byte[] utf8(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static String string(byte[] b) { return new String(b, StandardCharsets.UTF_8); }

    static byte[] longBytes(long v) { return ByteBuffer.allocate(8).putLong(v).array(); }

    static long asLong(byte[] b) throws ProtocolException {
        if (b.length != 8) throw new ProtocolException("numeric field must be 8 bytes, got " + b.length);
        return ByteBuffer.wrap(b).getLong();
    }

    void write(DataOutputStream out) throws IOException {
        long body = 0;
        for (byte[] f : fields) body += FIELD_LENGTH_BYTES + f.length;
        if (body > Integer.MAX_VALUE) throw new IllegalArgumentException("store frame too large: bodyBytes=" + body);
        out.writeInt(MAGIC);
        out.writeByte(opcode);
        out.writeByte(status);
        out.writeShort(fields.size());
        out.writeInt((int) body);
        for (byte[] f : fields) {
            out.writeInt(f.length);
            out.write(f);
        }
        out.flush();
    }

    /** Reads one frame, validating every length against {@code maxBodyBytes} before allocating anything. */
    static StoreFrame read(DataInputStream in, int maxBodyBytes) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) throw new ProtocolException(String.format("bad magic 0x%08x (expected 0x%08x)", magic, MAGIC));
        byte opcode = in.readByte();
        byte status = in.readByte();
        int count = in.readUnsignedShort();
        int body = in.readInt();
        if (opcode != OP_RESPONSE && !isRequestOpcode(opcode)) throw new ProtocolException("unknown opcode " + opcode);
        if (count > MAX_FIELDS) throw new ProtocolException("fieldCount=" + count + " exceeds max=" + MAX_FIELDS);
        if (body < 0 || body > maxBodyBytes) {
            throw new ProtocolException("bodyLength=" + Integer.toUnsignedString(body) + " exceeds max=" + maxBodyBytes);
        }
        if ((long) count * FIELD_LENGTH_BYTES > body) throw new ProtocolException("fieldCount=" + count + " does not fit bodyLength=" + body);
        List<byte[]> fields = new ArrayList<>(count);
        long left = body;
        for (int i = 0; i < count; i++) {
            int len = in.readInt();
            left -= FIELD_LENGTH_BYTES;
            if (len < 0 || len > left) throw new ProtocolException("field " + i + " length=" + len + " exceeds remaining body=" + left);
            byte[] f = new byte[len];
            in.readFully(f);
            left -= len;
            fields.add(f);
        }
        if (left != 0) throw new ProtocolException("bodyLength=" + body + " leaves " + left + " unparsed bytes");
        return new StoreFrame(opcode, status, fields);
    }
}
