/**
 * Rendezvous key-value stores: {@link dev.jtrain.comm.store.Store} (set, blocking get, add, compareSet, wait,
 * delete), {@link dev.jtrain.comm.store.InMemoryStore} for ranks-as-threads,
 * {@link dev.jtrain.comm.store.TcpStore}/{@link dev.jtrain.comm.store.TcpStoreServer} for processes, and
 * {@link dev.jtrain.comm.store.PrefixStore} for namespaces (restart attempts, groups).
 *
 * <p>Wire protocol: {@link dev.jtrain.comm.store.StoreFrameDescriptor}. Every connection starts with HELLO carrying
 * the job token; lengths are checked before allocation; nothing is Java-serialised.
 */
package dev.jtrain.comm.store;
