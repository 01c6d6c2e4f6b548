package dev.jtrain.parallel;

import dev.jtrain.comm.ChainedWork;
import dev.jtrain.comm.DType;
import dev.jtrain.comm.HostGroups;
import dev.jtrain.comm.ProcessGroup;
import dev.jtrain.comm.ReduceOp;
import dev.jtrain.comm.Work;
import dev.jtrain.nn.FlatParameters;

import java.lang.foreign.MemorySegment;

/**
 * The groups a ZeRO strategy works on: {@code shard}, whose ranks each own one shard and gather parameters from one
 * another, and {@code replicas}, the ranks holding the same shard (null when no rank shares its shard).
 *
 * <p>Under {@link ShardScope#HOST} (hybrid sharding) they are the host and the rail of {@link HostGroups}. A gradient
 * is then reduced in two steps, the second issued as soon as the first completes: a reduce-scatter within the host,
 * then an all-reduce of the S-float shard across the H hosts. Per rank, the inter-host links carry the all-reduce's
 * 2·(H-1)/H·S floats each way (S = Ψ/L for L ranks per host), against the flat reduce-scatter's (N-1)/N·Ψ over links that
 * cross hosts for every ring neighbour on another host; parameters are never gathered across hosts.
 *
 * @param acrossHosts issues the all-reduces across hosts in the order their reduce-scatters were launched, the same on
 *                    every rank (null without replicas)
 */
record ShardGroups(ProcessGroup shard, ProcessGroup replicas, ChainedWork.Sequence acrossHosts) {
    /**
     * Starts a sharded strategy on {@code job}: every rank takes rank 0's parameters (checked against its own), then
     * the groups to shard and replicate across are made. Collective.
     */
    static ShardGroups join(FlatParameters params, ProcessGroup job, ShardScope scope) {
        ParameterSync.verifyAndBroadcast(params, job);
        return of(job, scope);
    }

    static ShardGroups of(ProcessGroup group, ShardScope scope) {
        if (scope == ShardScope.WORLD || !group.topology().spansHosts()) return new ShardGroups(group, null, null);
        HostGroups g = HostGroups.split(group);
        return new ShardGroups(g.host(), g.rail(), new ChainedWork.Sequence());
    }

    /** True when ranks on other hosts hold the same shards (checkpoints write each once). */
    boolean replicated() {
        return replicas != null;
    }

    /**
     * Averages {@code in} (N·count floats, N = shard group size) over every rank of the job and leaves this rank's
     * shard of the result in {@code out} ({@code count} floats): a reduce-scatter (AVG) in the shard group, then, when
     * shards are replicated, an all-reduce (AVG) of {@code out} across the replicas.
     */
    Work reduceScatterAverage(MemorySegment in, MemorySegment out, long count, GradWire wire) {
        return reduceScatterAverage(in, out, count, wire, () -> {});
    }

    /**
     * As {@link #reduceScatterAverage(MemorySegment, MemorySegment, long, GradWire)}, running {@code beforeAllReduce}
     * on the communication thread between the two steps (when there are two): gradient accumulation adds the earlier
     * micro-steps' host averages into {@code out} there, so the hosts' links carry one all-reduce per optimizer step.
     */
    Work reduceScatterAverage(MemorySegment in, MemorySegment out, long count, GradWire wire, Runnable beforeAllReduce) {
        Work rs = reduceScatterWithinShardGroup(in, out, count, wire);
        if (replicas == null) return rs;
        return acrossHosts.then(rs, () -> {
            beforeAllReduce.run();
            return wire == GradWire.BF16 ? replicas.allReduceBf16WireAsync(out, count, ReduceOp.AVG)
                    : replicas.allReduceAsync(out, count, DType.FLOAT32, ReduceOp.AVG);
        });
    }

    /**
     * Averages {@code count} floats of {@code shard} across the replicas (blocking); nothing without them. For
     * gradients that were reduced within the host only.
     */
    void averageAcrossHosts(float[] shard, int count, GradWire wire) {
        if (replicas == null) return;
        MemorySegment s = MemorySegment.ofArray(shard).asSlice(0, 4L * count);
        if (wire == GradWire.BF16) replicas.allReduceBf16Wire(s, count, ReduceOp.AVG);
        else replicas.allReduce(s, count, DType.FLOAT32, ReduceOp.AVG);
    }

    /** Closes the groups this made (none under {@link ShardScope#WORLD}: the shard group is then the caller's). */
    void close() {
        if (replicas == null) return;
        replicas.close();
        shard.close();
    }

    /** The reduce-scatter (AVG) within the shard group alone: under hybrid sharding, the host's average. */
    Work reduceScatterWithinShardGroup(MemorySegment in, MemorySegment out, long count, GradWire wire) {
        return wire == GradWire.BF16 ? shard.reduceScatterBf16WireAsync(in, out, count, ReduceOp.AVG)
                : shard.reduceScatterAsync(in, out, count, DType.FLOAT32, ReduceOp.AVG);
    }
}
