package dev.jtrain.comm;

import dev.jtrain.comm.transport.Transport;

/**
 * Layout of the int tag handed to the {@link Transport}, so that groups and point-to-point
 * traffic never share a (peer, tag) stream:
 * <pre>
 *   bit  31   30        29 ............ 12   11 ............ 0
 *       +----+---------+--------------------+-----------------+
 *       | 0  | p2p = 1 |  group id (18 bits) | user tag (p2p)  |
 *       | 0  | p2p = 0 |  group id (18 bits) | channel 0..7    |
 *       +----+---------+--------------------+-----------------+
 * </pre>
 * Collective channels 0..3 belong to the algorithms, 4..7 to group bookkeeping (debug fingerprints).
 * Group ids are hierarchical: the world group is 0 and the i-th sub-group (i = 1..63) of group g is {@code g*64 + i}.
 */
final class TagSpace {
    static final int MAX_USER_TAG = (1 << 12) - 1;
    static final int MAX_GROUP_ID = (1 << 18) - 1;
    static final int MAX_CHILDREN = 63;
    static final int DEBUG_CHANNEL_BASE = 4;

    private TagSpace() {}

    static int collectiveBase(int groupId) { return groupId << 12; }

    static int p2p(int groupId, int userTag) {
        if (userTag < 0 || userTag > MAX_USER_TAG) {
            throw new IllegalArgumentException("tag must be in 0.." + MAX_USER_TAG + ": tag=" + userTag);
        }
        return (1 << 30) | (groupId << 12) | userTag;
    }

    static int childId(int parentId, int childIndex) {
        if (childIndex < 1 || childIndex > MAX_CHILDREN) {
            throw new IllegalStateException("a process group can have at most " + MAX_CHILDREN + " sub-groups: child="
                    + childIndex + " parentGroupId=" + parentId);
        }
        long id = (long) parentId * 64 + childIndex;
        if (id > MAX_GROUP_ID) {
            throw new IllegalStateException("sub-groups nested too deeply (tag space exhausted): parentGroupId=" + parentId
                    + " child=" + childIndex + "; create sub-groups from the world group instead");
        }
        return (int) id;
    }
}
