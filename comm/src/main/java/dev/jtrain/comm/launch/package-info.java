/**
 * Starting a job and joining it: {@link Launcher} (what {@code jtrain launch} runs) starts
 * one process per rank with the torchrun variables ({@link RendezvousEnv}) and hosts the
 * store; each rank calls {@link Rendezvous#fromEnv()} to get its rank and the store.
 */
package dev.jtrain.comm.launch;
