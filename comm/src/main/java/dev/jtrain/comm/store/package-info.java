/**
 * Rendezvous key-value stores: {@link Store} (set, blocking get, add, compareSet, wait,
 * delete), {@link InMemoryStore} for ranks-as-threads,
 * {@link TcpStore}/{@link TcpStoreServer} for processes, and
 * {@link PrefixStore} for namespaces (restart attempts, groups).
 *
 * <p>Wire protocol: {@link StoreFrameDescriptor}. Every connection starts with HELLO carrying
 * the job token; lengths are checked before allocation; nothing is Java-serialised.
 */
package dev.jtrain.comm.store;
