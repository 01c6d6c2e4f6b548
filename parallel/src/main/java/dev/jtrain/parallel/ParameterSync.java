package dev.jtrain.parallel;

import dev.jtrain.comm.DType;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.Work;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.Tensor;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** Start-of-training agreement: every rank has the same parameter layout, then everyone takes rank 0's values. */
final class ParameterSync {
    private ParameterSync() {}

    /**
     * All-gathers a fingerprint of (names, shapes, offsets) and fails on every rank, naming the first differing rank,
     * if any disagree: a mismatch would otherwise surface as a hang or silently wrong buckets.
     */
    static void verifyAndBroadcast(FlatParameters params, ProcessGroup pg) {
        long[] mine = {fingerprint(params), params.size(), params.slots().size()};
        long[] all = new long[3 * pg.size()];
        pg.allGather(MemorySegment.ofArray(mine), MemorySegment.ofArray(all), 3, DType.INT64);
        for (int r = 0; r < pg.size(); r++) {
            long[] theirs = Arrays.copyOfRange(all, 3 * r, 3 * r + 3);
            if (!Arrays.equals(theirs, Arrays.copyOfRange(all, 0, 3)))
                throw new IllegalStateException("parameter layouts differ across ranks: rank 0 has " + all[2] + " tensors / "
                        + all[1] + " floats (fingerprint " + Long.toHexString(all[0]) + "), rank " + r + " has " + theirs[2]
                        + " tensors / " + theirs[1] + " floats (fingerprint " + Long.toHexString(theirs[0])
                        + "). Build the same model (config, vocabulary) on every rank.");
        }
        if (params.hasDataBuffer()) {
            pg.broadcast(params.data(), 0, params.size(), 0);
            return;
        }
        for (var s : params.slots()) { // a layout only (ZeRO-3): each parameter in its own storage
            Tensor p = s.param();
            pg.broadcast(p.data(), p.offset(), s.numel(), 0);
        }
    }

    private static long fingerprint(FlatParameters params) {
        long h = 1125899906842597L;
        for (var s : params.slots()) {
            h = 31 * h + s.name().hashCode();
            for (int d : s.param().shape()) h = 31 * h + d;
            h = 31 * h + s.offset();
        }
        return h;
    }

    static float average(ProcessGroup pg, float v) {
        float[] x = {v};
        pg.allReduce(x, 0, 1, ReduceOp.AVG);
        return x[0];
    }

    static DataParallel.Means averageAsync(ProcessGroup pg, float[] values) {
        float[] x = values.clone();
        Work w = pg.allReduceAsync(x, 0, x.length, ReduceOp.AVG);
        return () -> {
            w.waitFor();
            return x;
        };
    }
}
