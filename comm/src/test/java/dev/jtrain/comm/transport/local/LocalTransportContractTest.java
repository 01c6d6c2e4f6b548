package dev.jtrain.comm.transport.local;

import dev.jtrain.comm.transport.LinkKind;
import dev.jtrain.comm.transport.Transport;
import dev.jtrain.comm.transport.TransportContractTest;

/** The transport contract for ranks as threads. */
class LocalTransportContractTest extends TransportContractTest {
    @Override
    protected Transport[] createGroup(int size, long timeoutMs, long maxUnexpectedBytes) { return LocalTransport.createGroup(size, timeoutMs); }

    /** Ranks as threads share one heap; their mailboxes are not held to a budget. */
    @Override
    protected boolean boundsUnexpectedBytes() { return false; }

    @Override
    protected LinkKind expectedLinkKind() { return LinkKind.LOCAL; }

    /** Mailboxes have no limit: any size shows the cycle completes. */
    @Override
    protected long largerThanTheLinksBuffers() { return 1L << 20; }

    /** Local sends are buffered in the receiver's mailbox, so they never block. */
    @Override
    protected boolean sendBlocksWhileReceiverIsIdle() { return false; }
}
