/** Ranks as threads of one JVM over in-memory mailboxes: the fast harness for collective-algorithm tests. */
package dev.jtrain.comm.transport.local;
