/**
 * Shared-memory transport between processes of one host: one single-producer single-consumer byte ring per
 * ordered pair of ranks in a {@code /dev/shm} file that is unlinked as soon as both ends have mapped it
 * ({@link ShmBootstrap}); layout in
 * {@link ShmRingDescriptor}. Progress is driven by the calling threads (no
 * background threads), waiting spins, yields, then parks ({@link Backoff}).
 */
package dev.jtrain.comm.transport.shm;
