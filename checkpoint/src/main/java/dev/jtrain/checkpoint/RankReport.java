package dev.jtrain.checkpoint;

import java.util.List;
import java.util.Map;

/**
 * A rank's message to the coordinator after writing: its file is durable (or why not), the CRC32C of each piece in
 * write order, and its parts' small metadata. {@code planHash} lets the coordinator refuse to commit if ranks used
 * different plans.
 */
record RankReport(int rank, int planHash, String file, long fileBytes, long dataStart, List<String> crc32c,
                  Map<String, Map<String, String>> state, String error) {}
