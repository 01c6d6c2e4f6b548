package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportContractTest;

/** The transport contract for ranks as threads. */
class LocalTransportContractTest extends TransportContractTest {
    @Override
    protected Transport[] createGroup(int size, long timeoutMs) { return LocalTransport.createGroup(size, timeoutMs); }

    @Override
    protected String expectedLinkKind() { return "local"; }

    /** Local sends are buffered in the receiver's mailbox, so they never block. */
    @Override
    protected boolean sendBlocksWhileReceiverIsIdle() { return false; }
}
