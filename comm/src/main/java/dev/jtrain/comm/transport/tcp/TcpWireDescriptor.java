package dev.jtrain.comm.transport.tcp;

/**
 * Byte layouts of {@link TcpTransport}'s connections, in one place (Agrona descriptor style). Big-endian.
 *
 * <p><b>Handshake</b>, sent once by the higher rank right after connecting to the lower one:
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                    Magic 0x4A545431 ("JTT1")                  |
 *  +-------------------------------+-------------------------------+
 *  |           Version             |        Token Length           |
 *  +-------------------------------+-------------------------------+
 *  |        Group Id Length        |           Reserved            |
 *  +-------------------------------+-------------------------------+
 *  |                          Sender Rank                          |
 *  +---------------------------------------------------------------+
 *  |                          Group Size                           |
 *  +---------------------------------------------------------------+
 *  |                     Job Token bytes ...                      ...
 *  +---------------------------------------------------------------+
 *  |                     Group Id bytes (UTF-8) ...               ...
 *  +---------------------------------------------------------------+
 * </pre>
 * The lower rank answers with {@code [Magic int32][Status int32]}, status {@link #ACCEPTED} or {@link #REJECTED};
 * a stranger (bad magic, lengths over {@link #MAX_TOKEN_BYTES}/{@link #MAX_GROUP_ID_BYTES}, wrong token or group,
 * rank out of range or already connected, silence past the handshake timeout) is logged and dropped.
 *
 * <p><b>Message frame</b>, one per {@code send}, the payload streamed right behind it with no padding:
 * <pre>
 *  +---------------------------------------------------------------+
 *  |                    Magic 0x4A544D31 ("JTM1")                  |
 *  +---------------------------------------------------------------+
 *  |                              Tag                              |
 *  +---------------------------------------------------------------+
 *  |                     Payload Length (int64)                    |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |                     Payload bytes ...                        ...
 * </pre>
 */
public final class TcpWireDescriptor {
    private TcpWireDescriptor() { }

    public static final int HANDSHAKE_MAGIC = 0x4A545431;
    public static final int VERSION = 1;
    public static final int HANDSHAKE_FIXED_LENGTH = 20;
    public static final int MAX_TOKEN_BYTES = 1024;
    public static final int MAX_GROUP_ID_BYTES = 256;
    public static final int HANDSHAKE_REPLY_LENGTH = 8;
    public static final int ACCEPTED = 0;
    public static final int REJECTED = 1;

    public static final int FRAME_MAGIC = 0x4A544D31;
    public static final int FRAME_MAGIC_OFFSET = 0;
    public static final int FRAME_TAG_OFFSET = 4;
    public static final int FRAME_LENGTH_OFFSET = 8;
    public static final int FRAME_HEADER_LENGTH = 16;
}
