/**
 * Starting a job and joining it: {@link dev.jtrain.comm.launch.Launcher} (what {@code jtrain launch} runs) starts
 * one process per rank with the torchrun variables ({@link dev.jtrain.comm.launch.RendezvousEnv}) and hosts the
 * store; each rank calls {@link dev.jtrain.comm.launch.Rendezvous#fromEnv()} to get its rank and the store.
 */
package dev.jtrain.comm.launch;
