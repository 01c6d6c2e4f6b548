package dev.jtrain.checkpoint;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The save plans on the wire (a rank's {@link LocalPlan} to the coordinator, its {@link SavePlanner.Reply} back), in a
 * fixed binary layout: lengths, then fields in record order, strings as UTF-8 with an int length.
 *
 * <p>Why not JSON: these messages are never stored, and the first save of a process decoded them with a cold JSON
 * mapper on the critical path of a collective, so every rank waited for the slowest parse, most of the first save's
 * stall (bench/MEASUREMENTS.md, "first save"). Plain field reads cost little even before the JIT has seen them. The
 * metadata a checkpoint keeps on disk stays JSON.
 */
final class PlanCodec {
    /** First byte of every encoded plan message: changes when the layout does. */
    private static final byte FORMAT = 1;

    private PlanCodec() {}

    static byte[] encode(LocalPlan plan) {
        return write(out -> writeLocal(out, plan));
    }

    static LocalPlan decodeLocal(byte[] bytes) {
        return read(bytes, "local plan", PlanCodec::readLocal);
    }

    static byte[] encode(SavePlanner.Reply reply) {
        return write(out -> {
            out.writeBoolean(reply.error() != null);
            if (reply.error() != null) {
                writeString(out, reply.error());
                return;
            }
            GlobalPlan p = reply.plan();
            out.writeInt(p.worldSize());
            out.writeInt(p.writes().size());
            for (List<WriteItem> ws : p.writes()) {
                out.writeInt(ws.size());
                for (WriteItem w : ws) {
                    out.writeInt(w.localIndex());
                    writeString(out, w.item());
                    out.writeLong(w.offset());
                    out.writeLong(w.length());
                    writeString(out, w.tensor());
                    out.writeLong(w.begin());
                }
            }
            out.writeInt(p.layout().size());
            for (LocalPlan l : p.layout()) writeLocal(out, l);
        });
    }

    static SavePlanner.Reply decodeReply(byte[] bytes) {
        return read(bytes, "plan reply", in -> {
            if (in.readBoolean()) return new SavePlanner.Reply(null, readString(in));
            int world = in.readInt();
            int ranks = count(in, "ranks");
            List<List<WriteItem>> writes = new ArrayList<>(ranks);
            for (int r = 0; r < ranks; r++) {
                int n = count(in, "write items");
                List<WriteItem> ws = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    ws.add(new WriteItem(in.readInt(), readString(in), in.readLong(), in.readLong(), readString(in),
                            in.readLong()));
                }
                writes.add(ws);
            }
            int layouts = count(in, "local plans");
            List<LocalPlan> layout = new ArrayList<>(layouts);
            for (int r = 0; r < layouts; r++) layout.add(readLocal(in));
            return new SavePlanner.Reply(new GlobalPlan(world, writes, layout), null);
        });
    }

    private static void writeLocal(DataOutputStream out, LocalPlan plan) throws IOException {
        out.writeInt(plan.rank());
        out.writeInt(plan.worldSize());
        out.writeInt(plan.shards().size());
        for (PlannedShard s : plan.shards()) {
            writeString(out, s.item());
            long[] shape = s.shape();
            out.writeInt(shape.length);
            for (long d : shape) out.writeLong(d);
            writeString(out, s.dtype());
            out.writeLong(s.offset());
            out.writeLong(s.length());
            out.writeBoolean(s.replicated());
        }
    }

    private static LocalPlan readLocal(DataInputStream in) throws IOException {
        int rank = in.readInt(), world = in.readInt();
        int n = count(in, "shards");
        List<PlannedShard> shards = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String item = readString(in);
            long[] shape = new long[count(in, "dimensions")];
            for (int d = 0; d < shape.length; d++) shape[d] = in.readLong();
            shards.add(new PlannedShard(item, shape, readString(in), in.readLong(), in.readLong(), in.readBoolean()));
        }
        return new LocalPlan(rank, world, shards);
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] b = new byte[count(in, "string bytes")];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    /** A count read from the message; a negative one or one beyond the bytes left means the message is not a plan. */
    private static int count(DataInputStream in, String what) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > in.available())
            throw new IOException(what + " count " + n + " with " + in.available() + " bytes left");
        return n;
    }

    private interface Writer {
        void write(DataOutputStream out) throws IOException;
    }

    private interface Reader<T> {
        T read(DataInputStream in) throws IOException;
    }

    private static byte[] write(Writer w) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(4096);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(FORMAT);
            w.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte array does not fail
        }
        return bytes.toByteArray();
    }

    private static <T> T read(byte[] bytes, String what, Reader<T> r) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            byte format = in.readByte();
            if (format != FORMAT)
                throw new CheckpointException("cannot decode the " + what + ": format " + format + ", this build reads "
                        + FORMAT + "; are all ranks running the same jtrain?");
            T t = r.read(in);
            if (in.available() != 0)
                throw new CheckpointException("cannot decode the " + what + ": " + in.available() + " bytes left over");
            return t;
        } catch (EOFException e) {
            throw new CheckpointException("cannot decode the " + what + ": the message is " + bytes.length
                    + " bytes, cut short", e);
        } catch (IOException e) {
            throw new CheckpointException("cannot decode the " + what + ": " + e.getMessage(), e);
        }
    }
}
