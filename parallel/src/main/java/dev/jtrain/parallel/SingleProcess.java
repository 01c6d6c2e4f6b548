package dev.jtrain.parallel;

import dev.jtrain.nn.FlatParameters;
import dev.jtrain.optim.AdamW;
import dev.jtrain.optim.GradClip;
import dev.jtrain.tensor.state.Stateful;

/** One process, no communication: clip and AdamW over the flat buffers. */
public final class SingleProcess implements DataParallel {
    private final FlatParameters params;
    private final AdamW adam;

    public SingleProcess(FlatParameters params, DataParallelOptions o) {
        this.params = params;
        this.adam = new AdamW(params, new AdamW.Options(o.beta1(), o.beta2(), o.eps(), o.weightDecay()));
    }

    @Override public int rank() { return 0; }

    @Override public int worldSize() { return 1; }

    @Override public void zeroGrad() { params.zeroGrad(); }

    @Override public void beginMicroStep(boolean sync) {}

    @Override public long finishGradients() { return 0; }

    @Override
    public float step(float lr, float maxNorm) {
        float norm = GradClip.clipByGlobalNorm(params.grad(), maxNorm);
        adam.step(lr);
        return norm;
    }

    @Override public float average(float value) { return value; }

    @Override public long lastStepCommNanos() { return 0; }

    @Override
    public MemoryReport memory() { return MemoryReport.replicated(params, adam); }

    @Override public int stepCount() { return adam.stepCount(); }

    public AdamW optimizer() { return adam; }

    @Override
    public Stateful modelState() { return ReplicatedState.parameters(params, false); }

    @Override
    public Stateful optimizerState() {
        return ReplicatedState.adam(params, adam.exp_avg(), adam.exp_avg_sq(), false, adam::stepCount, adam::setStepCount);
    }
}
