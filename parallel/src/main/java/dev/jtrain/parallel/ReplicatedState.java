package dev.jtrain.parallel;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;
import java.util.function.IntSupplier;

/**
 * Checkpoint views of state that every rank holds whole: the parameters (always), and AdamW's m and v in one process
 * or under DDP. Tensor names: the parameter's own name, and {@code optimizer.exp_avg.<name>} /
 * {@code optimizer.exp_avg_sq.<name>}, the same names ZeRO uses for its shards, so a checkpoint moves between
 * strategies and world sizes.
 */
final class ReplicatedState {
    private ReplicatedState() {}

    static Stateful parameters(FlatParameters params, boolean replicated) {
        return new Stateful() {
            @Override
            public List<TensorShard> shards() {
                List<TensorShard> out = new ArrayList<>();
                for (var s : params.slots())
                    out.add(new TensorShard(s.name(), shape(s), 0, params.data(), s.offset(), s.numel(), replicated));
                return out;
            }

            @Override public Map<String, String> metadata() { return Map.of(); }

            @Override public void restore(Map<String, String> metadata) {}
        };
    }

    static Stateful adam(FlatParameters params, float[] m, float[] v, boolean replicated, IntSupplier step, IntConsumer setStep) {
        return new Stateful() {
            @Override
            public List<TensorShard> shards() {
                List<TensorShard> out = new ArrayList<>();
                for (var s : params.slots()) {
                    out.add(new TensorShard("optimizer.exp_avg." + s.name(), shape(s), 0, m, s.offset(), s.numel(), replicated));
                    out.add(new TensorShard("optimizer.exp_avg_sq." + s.name(), shape(s), 0, v, s.offset(), s.numel(), replicated));
                }
                return out;
            }

            @Override public Map<String, String> metadata() { return Map.of("optimizer.step", Integer.toString(step.getAsInt())); }

            @Override public void restore(Map<String, String> metadata) { setStep.accept(Integer.parseInt(metadata.getOrDefault("optimizer.step", "0"))); }
        };
    }

    static long[] shape(FlatParameters.Slot s) {
        int[] sh = s.param().shape();
        long[] out = new long[sh.length];
        for (int i = 0; i < sh.length; i++) out[i] = sh[i];
        return out;
    }
}
