package dev.jtrain.parallel;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.FlatOptimizer;
import dev.jtrain.tensor.state.Stateful;
import dev.jtrain.tensor.state.TensorShard;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Checkpoint views of state that every rank holds whole: the parameters (always), and the optimizer's state in one
 * process or under DDP. Tensor names: the parameter's own name, and {@link #stateName} ({@code optimizer.exp_avg.<name>}
 * for AdamW's m), the same names ZeRO uses for its shards, so a checkpoint moves between strategies and world sizes.
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

    /** The optimizer's state buffers, named {@code optimizer.<state name>.<parameter>}, and its step count. */
    static Stateful optimizer(FlatParameters params, FlatOptimizer opt, boolean replicated) {
        List<String> names = opt.optimizer().stateNames();
        return new Stateful() {
            @Override
            public List<TensorShard> shards() {
                List<TensorShard> out = new ArrayList<>();
                for (var s : params.slots()) {
                    for (int k = 0; k < names.size(); k++) {
                        out.add(new TensorShard(stateName(names.get(k), s.name()), shape(s), 0, opt.state()[k], s.offset(), s.numel(), replicated));
                    }
                }
                return out;
            }

            @Override public Map<String, String> metadata() { return Map.of(STEP_KEY, Integer.toString(opt.stepCount())); }

            @Override public void restore(Map<String, String> metadata) { opt.setStepCount(Integer.parseInt(metadata.getOrDefault(STEP_KEY, "0"))); }
        };
    }

    static final String STEP_KEY = "optimizer.step";

    /** Checkpoint name of optimizer state {@code state} of parameter {@code param}: the same for every strategy. */
    static String stateName(String state, String param) { return "optimizer." + state + "." + param; }

    static long[] shape(FlatParameters.Slot s) {
        int[] sh = s.param().shape();
        long[] out = new long[sh.length];
        for (int i = 0; i < sh.length; i++) out[i] = sh[i];
        return out;
    }
}
