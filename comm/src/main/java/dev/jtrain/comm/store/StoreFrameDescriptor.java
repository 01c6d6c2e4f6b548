package dev.jtrain.comm.store;

/**
 * Layout of the frames {@link TcpStore} and {@link TcpStoreServer} exchange (Agrona descriptor style: every offset
 * and limit lives here). Requests and responses share one header; all integers are big-endian.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                     Magic 0x4A545331 ("JTS1")                 |
 *  +---------------+---------------+-------------------------------+
 *  |    Opcode     |    Status     |          Field Count          |
 *  +---------------+---------------+-------------------------------+
 *  |              Body Length (bytes after this header)            |
 *  +---------------------------------------------------------------+
 *  |                      Field 0 Length (int32)                   |
 *  +---------------------------------------------------------------+
 *  |                      Field 0 bytes ...                       ...
 *  +---------------------------------------------------------------+
 *  |                      Field 1 Length ... (Field Count times)   |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * <p>Fields per opcode (request → response); keys are UTF-8, numbers are 8-byte fields:
 * <pre>
 *   HELLO    [jobToken, clientName]       → []          must be the first frame of a connection
 *   SET      [key, value]                 → []
 *   GET      [key, timeoutMs]             → [value]
 *   ADD      [key, delta]                 → [newValue]
 *   CAS      [key, expected, desired]     → [value after]
 *   WAIT     [timeoutMs, key, key...]     → []
 *   DELETE   [key]                        → [1 byte: existed]
 *   NUM_KEYS []                           → [count]
 *   ADOPT    [key, fileName, length]      → []          bulk store only: the first length bytes of fileName (in the
 *                                                       server's adoption directory, same host) become key's value
 *   error responses: status ERROR or TIMEOUT, fields [message]
 * </pre>
 *
 * <p>A reader checks the magic, the opcode, the field count and the body length against
 * {@link #MAX_FIELDS} and the configured maximum <em>before</em> allocating, so an oversized length field from a
 * stranger costs nothing.
 */
public final class StoreFrameDescriptor {
    private StoreFrameDescriptor() { }

    public static final int MAGIC = 0x4A545331;
    public static final int MAGIC_OFFSET = 0;
    public static final int OPCODE_OFFSET = 4;
    public static final int STATUS_OFFSET = 5;
    public static final int FIELD_COUNT_OFFSET = 6;
    public static final int BODY_LENGTH_OFFSET = 8;
    public static final int HEADER_LENGTH = 12;
    public static final int FIELD_LENGTH_BYTES = 4;

    /** More fields than this is a protocol violation (WAIT on thousands of keys should use a counter instead). */
    public static final int MAX_FIELDS = 4096;
    /** Default maximum body size; rendezvous values are addresses and counters, far below this. */
    public static final int DEFAULT_MAX_BODY_BYTES = 16 << 20;

    public static final byte OP_HELLO = 1;
    public static final byte OP_SET = 2;
    public static final byte OP_GET = 3;
    public static final byte OP_ADD = 4;
    public static final byte OP_CAS = 5;
    public static final byte OP_WAIT = 6;
    public static final byte OP_DELETE = 7;
    public static final byte OP_NUM_KEYS = 8;
    public static final byte OP_ADOPT = 9;
    public static final byte OP_LOCATE = 10;
    /** [key, value]: the server sets key to value when this connection ends (see {@link Store#setWhenGone}). */
    public static final byte OP_SET_WHEN_GONE = 11;
    public static final byte OP_RESPONSE = 127;

    public static final byte STATUS_OK = 0;
    public static final byte STATUS_ERROR = 1;
    public static final byte STATUS_TIMEOUT = 2;

    static boolean isRequestOpcode(byte op) { return op >= OP_HELLO && op <= OP_SET_WHEN_GONE; }
}
