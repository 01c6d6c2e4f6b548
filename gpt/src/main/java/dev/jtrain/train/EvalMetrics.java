package dev.jtrain.train;

/** A validation (and train) loss estimate at a step. */
public record EvalMetrics(int step, float trainLoss, float valLoss, double elapsedSeconds) {}
