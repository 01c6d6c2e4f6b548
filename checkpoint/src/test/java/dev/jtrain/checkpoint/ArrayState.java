package dev.jtrain.checkpoint;

import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A test {@link Stateful}: named tensors given as flat-range shards over one local buffer, plus string metadata.
 * Values are a pure function of (tensor, global index, salt), so any rank can compute what any element should be.
 */
final class ArrayState implements Stateful {
    record Spec(String name, long[] shape, long offset, int length, boolean replicated) {}

    final List<Spec> specs = new ArrayList<>();
    final List<Integer> offsets = new ArrayList<>();
    float[] buffer = new float[0];
    Map<String, String> meta = new LinkedHashMap<>();
    Map<String, String> restored;

    ArrayState add(String name, long[] shape, long offset, int length, boolean replicated) {
        specs.add(new Spec(name, shape, offset, length, replicated));
        offsets.add(buffer.length);
        buffer = java.util.Arrays.copyOf(buffer, buffer.length + length);
        return this;
    }

    /** The whole tensor. */
    ArrayState whole(String name, boolean replicated, long... shape) {
        long n = 1;
        for (long d : shape) n *= d;
        return add(name, shape, 0, (int) n, replicated);
    }

    static float value(String name, long index, int salt) {
        return name.hashCode() % 1000 + index * 0.001f + salt * 1000f;
    }

    ArrayState fill(int salt) {
        for (int s = 0; s < specs.size(); s++)
            for (int i = 0; i < specs.get(s).length(); i++)
                buffer[offsets.get(s) + i] = value(specs.get(s).name(), specs.get(s).offset() + i, salt);
        return this;
    }

    /** Asserts every element holds value(name, global index, salt); returns the first mismatch or null. */
    String check(int salt) {
        for (int s = 0; s < specs.size(); s++)
            for (int i = 0; i < specs.get(s).length(); i++) {
                float want = value(specs.get(s).name(), specs.get(s).offset() + i, salt);
                float got = buffer[offsets.get(s) + i];
                if (Float.floatToIntBits(want) != Float.floatToIntBits(got))
                    return specs.get(s).name() + "[" + (specs.get(s).offset() + i) + "] = " + got + ", want " + want;
            }
        return null;
    }

    @Override
    public List<TensorShard> shards() {
        List<TensorShard> out = new ArrayList<>();
        for (int s = 0; s < specs.size(); s++) {
            Spec sp = specs.get(s);
            out.add(new TensorShard(sp.name(), sp.shape(), sp.offset(), buffer, offsets.get(s), sp.length(), sp.replicated()));
        }
        return out;
    }

    @Override public Map<String, String> metadata() { return meta; }

    @Override public void restore(Map<String, String> metadata) { restored = new LinkedHashMap<>(metadata); }

    /**
     * Rank {@code rank}'s share of a tensor of {@code numel} elements cut at the given boundaries (cuts.length = world+1),
     * ZeRO-style: arbitrary element boundaries, not rows.
     */
    static long[] range(long[] cuts, int rank) {
        return new long[]{cuts[rank], cuts[rank + 1] - cuts[rank]};
    }
}
