package dev.jtrain.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code jtrain topo} for real: two ranks in their own JVMs on this host, over the transport asked for. The table must
 * name the link the transport really built between them (shared memory under {@code auto}, since both ranks share the
 * host; TCP when forced) with a measured latency and bandwidth in both directions, and bad flags must fail at once.
 */
@Timeout(120)
class TopoCommandTest {
    /** An off-diagonal cell: link kind, latency (half the median round trip) and one-way bandwidth. */
    private static final Pattern LINK = Pattern.compile("([A-Z]+) ([0-9.]+)us ([0-9.]+)GB/s");
    /** A row of the 2 x 2 matrix: rank, host, then two cells (a link or the diagonal's X). */
    private static final Pattern ROW = Pattern.compile("rank (\\d) (\\S+)\\s+(X|" + LINK.pattern() + ")\\s+(X|" + LINK.pattern() + ")\\s*");

    @ParameterizedTest(name = "--transport {0} gives {1} links")
    @CsvSource({"auto, SHM", "tcp, TCP"})
    void twoLocalRanksShowTheirLinkKindWithMeasuredLatencyAndBandwidth(String transport, String kind) {
        String out = CliRunner.run("topo", "--nproc", "2", "--transport", transport);
        List<String> all = out.lines().toList();
        int start = IntStream.range(0, all.size()).filter(i -> all.get(i).startsWith("hosts: ")).findFirst().orElse(-1);
        assertThat(start).as("the table's first line in:%n%s", out).isNotNegative();
        List<String> lines = all.subList(start, all.size());
        assertThat(lines).as(out).hasSizeGreaterThan(4);
        assertThat(lines.get(0)).as("both ranks on one host").matches("hosts: \\S+\\[0, 1\\]");
        assertThat(lines.get(1)).contains("rank 0", "rank 1").doesNotContain("|");
        String host = lines.get(0).substring("hosts: ".length(), lines.get(0).indexOf('['));
        for (int r = 0; r < 2; r++) {
            String row = lines.get(2 + r);
            Matcher m = ROW.matcher(row);
            assertThat(m.matches()).as("row %d: %s", r, row).isTrue();
            assertThat(m.group(1)).isEqualTo(Integer.toString(r));
            assertThat(m.group(2)).isEqualTo(host);
            String diagonal = r == 0 ? m.group(3) : m.group(7), link = r == 0 ? m.group(7) : m.group(3);
            assertThat(diagonal).as("rank %d to itself", r).isEqualTo("X");
            Matcher cell = LINK.matcher(link);
            assertThat(cell.matches()).as("rank %d to rank %d: %s", r, 1 - r, link).isTrue();
            assertThat(cell.group(1)).as("link kind in %s", row).isEqualTo(kind);
            assertThat(Double.parseDouble(cell.group(2))).as("latency in us, %s", row).isPositive();
            assertThat(Double.parseDouble(cell.group(3))).as("bandwidth in GB/s, %s", row).isPositive();
        }
        assertThat(lines.get(4)).as("no host boundary on one host").isEmpty();
        assertThat(out).containsPattern("within a host: +alpha=[0-9.]+us beta=[0-9.]+GB/s").doesNotContain("between hosts:");
        String pin = out.replaceAll("(?s).*JTRAIN_LINK_COSTS='([^']*)'.*", "$1");
        assertThat(pin).as("what topo prints to pin is what it measured, in the form the variable takes")
                .startsWith("intra: alpha=").isEqualTo(out.replaceAll("(?s).*within a host: +(alpha=[^\n]*)\n.*", "intra: $1"));
        assertThat(dev.jtrain.comm.algo.CostModelProbe.LinkCosts.parse(pin).format()).isEqualTo(pin);
    }

    @Test
    void badArgumentsFailAtOnceNamingTheFlag() {
        assertFails("--nproc must be >= 1, got 0", "topo", "--nproc", "0");
        assertFails("--transport must be auto, shm or tcp, got ib", "topo", "--transport", "ib");
        assertFails("'two'", "topo", "--nproc", "two"); // picocli: Invalid value for option '--nproc': 'two' is not an int
    }

    /** Runs a command that must fail: non-zero exit, {@code message} on stderr (or stdout), and no table. */
    private static void assertFails(String message, String... args) {
        PrintStream old = System.err;
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        CliRunner.Result r;
        try {
            r = CliRunner.exec(args);
        } finally {
            System.setErr(old);
        }
        String said = err.toString(StandardCharsets.UTF_8) + r.out();
        assertThat(r.code()).as("exit code of jtrain %s\n%s", String.join(" ", args), said).isNotZero();
        assertThat(said).contains(message).doesNotContain("hosts:");
    }
}
