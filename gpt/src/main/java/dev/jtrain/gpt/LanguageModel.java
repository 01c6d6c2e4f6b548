package dev.jtrain.gpt;

import dev.jtrain.nn.Module;
import dev.jtrain.tensor.Rng;
import dev.jtrain.tensor.Tensor;

import java.util.Map;

/**
 * What the trainer ({@code dev.jtrain.train.Trainer}) needs from a model: its parameters, a next-token loss, its FLOP count for MFU, and the
 * state that must travel in checkpoints. {@link Gpt} is one; another architecture trains by
 * implementing this, without touching the trainer.
 */
public interface LanguageModel {
    /** The module whose parameters train (the trainer flattens them into one buffer). */
    Module module();

    /** Mean next-token cross-entropy of {@code rows} windows of {@code time} tokens (targets, negative ids ignored). */
    Tensor loss(int[] inputs, int[] targets, int rows, int time);

    /** Training FLOPs per token at context {@code time} (forward + backward), for MFU. */
    double flopsPerToken(int time);

    /** The generator behind dropout masks: checkpointed so a resumed run draws the same masks. */
    Rng dropoutRng();

    void setActivationCheckpointing(boolean on);

    /** Receives per-block forward/backward spans (null: none). */
    void setTracer(BlockTracer tracer);

    /** Shape hyper-parameters written into checkpoints, so tools can rebuild the model (e.g. {@code gpt.n_layer}). */
    Map<String, String> shapeMetadata();
}
