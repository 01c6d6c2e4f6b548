package dev.jtrain.parallel;

import dev.jtrain.comm.transport.local.LocalRanks;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.Optimizer;
import dev.jtrain.tensor.state.TensorShard;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * A new optimizer plugs into every strategy through {@link Optimizer} alone: SGD with momentum (one state buffer,
 * defined only in this test) trains the same under one process, DDP and ZeRO-1/2, and its state is checkpointed as
 * {@code optimizer.momentum.<param>} by each.
 */
@Timeout(120)
class OptimizerSeamTest {
    /** p -= lr·(μ·buf + g) with buf = μ·buf + g; no decay; the step number is unused. */
    record MomentumSgd(float mu) implements Optimizer {
        @Override public List<String> stateNames() { return List.of("momentum"); }

        @Override
        public void step(float[] p, int pOff, float[] g, int gOff, float[][] state, int sOff, int n, float lr, boolean decay, int step) {
            float[] buf = state[0];
            for (int i = 0; i < n; i++) {
                buf[sOff + i] = mu * buf[sOff + i] + g[gOff + i];
                p[pOff + i] -= lr * buf[sOff + i];
            }
        }
    }

    record Outcome(float[] params, Set<String> stateNames) { }

    private static Outcome train(int world, int stage) throws Exception {
        List<Outcome> ranks = LocalRanks.run(world, (rank, pg) -> {
            TinyLm m = new TinyLm(37, 21, 1);
            FlatParameters flat = FlatParameters.of(m);
            DataParallelOptions o = DataParallelOptions.defaults().withZeroStage(stage).withBuckets(512, 2048)
                    .withOptimizer(new MomentumSgd(0.9f));
            DataParallel dp = world == 1 ? new SingleProcess(flat, o)
                    : stage == 0 ? new DistributedDataParallel(flat, pg, o, null) : new ZeroOptimizer(flat, pg, o, null);
            int rows = 8 / world; // the same global batch of 8 windows, split across ranks
            for (int step = 0; step < 3; step++) {
                dp.zeroGrad();
                dp.beginMicroStep(true);
                int[] x = DataParallelBehaviourTest.ids(100 + step, 8 * 8, 37), y = DataParallelBehaviourTest.ids(200 + step, 8 * 8, 37);
                int from = rank * rows * 8;
                m.loss(java.util.Arrays.copyOfRange(x, from, from + rows * 8), java.util.Arrays.copyOfRange(y, from, from + rows * 8), rows, 8).backward();
                dp.finishGradients();
                dp.step(0.05f, 0f);
            }
            Set<String> names = new TreeSet<>();
            for (TensorShard t : dp.optimizerState().shards()) names.add(t.name().substring(0, t.name().indexOf('.', "optimizer.".length())));
            return new Outcome(flat.data().clone(), names);
        });
        return ranks.get(0);
    }

    @Test
    void aNewOptimizerTrainsTheSameUnderEveryStrategyAndNamesItsState() throws Exception {
        Outcome one = train(1, 0);
        assertThat(one.stateNames()).containsExactly("optimizer.momentum");
        for (int stage : new int[]{0, 1, 2}) {
            Outcome two = train(2, stage);
            assertThat(two.stateNames()).as("stage %d", stage).containsExactly("optimizer.momentum");
            for (int i = 0; i < one.params().length; i++) {
                assertThat(two.params()[i]).as("stage %d parameter %d", stage, i).isCloseTo(one.params()[i], within(2e-5f));
            }
        }
    }
}
