/**
 * Liveness of the ranks beyond what sockets and rings tell: {@link dev.jtrain.comm.health.PeerHeartbeat} catches a
 * rank that stays alive but silent and names it, within {@link dev.jtrain.comm.health.HeartbeatOptions#timeoutMs}.
 */
package dev.jtrain.comm.health;
