/**
 * TCP transport: a full mesh of persistent connections built through the store
 * ({@link TcpBootstrap}), one reader thread per peer streaming payloads straight
 * into posted receives, a watchdog bounding blocked writes. Layouts: {@link TcpWireDescriptor}.
 *
 * <p>Socket buffers are left to the kernel's auto-tuning by default: an explicit SO_RCVBUF is capped by
 * {@code net.core.rmem_max} (4 MiB here) and switches auto-tuning off, which measured slower on loopback than the
 * auto-tuned windows (up to {@code tcp_rmem} max, 32 MiB here).
 */
package dev.jtrain.comm.transport.tcp;
