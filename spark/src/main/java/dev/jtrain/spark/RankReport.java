package dev.jtrain.spark;

import java.io.Serializable;
import java.util.List;

/**
 * What one rank's task returns to the driver.
 *
 * @param rank     the jtrain rank (= Spark partition id)
 * @param host     the executor host it ran on
 * @param exitCode the child's exit code (0: the task would have failed otherwise)
 * @param lines    lines of its partition it trained on (0 when the data came from a path)
 * @param tail     the last lines of its output (jtrain's summary)
 */
public record RankReport(int rank, String host, int exitCode, long lines, List<String> tail) implements Serializable {
    public RankReport {
        tail = List.copyOf(tail);
    }
}
