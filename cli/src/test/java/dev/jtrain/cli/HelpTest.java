package dev.jtrain.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code --help} explains every flag and parameter of every command. */
class HelpTest {
    private static void collect(CommandLine cmd, List<String> undocumented) {
        CommandSpec spec = cmd.getCommandSpec();
        List<ArgSpec> args = new ArrayList<>(spec.options());
        args.addAll(spec.positionalParameters());
        for (ArgSpec a : args) {
            String[] d = a.description();
            boolean empty = d == null || d.length == 0 || String.join("", d).isBlank();
            String name = a.isOption() ? ((CommandLine.Model.OptionSpec) a).longestName() : a.paramLabel();
            if (empty) undocumented.add(spec.qualifiedName() + " " + name);
        }
        cmd.getSubcommands().values().forEach(sub -> collect(sub, undocumented));
    }

    @Test
    void everyOptionOfEveryCommandHasADescription() {
        List<String> undocumented = new ArrayList<>();
        collect(Main.commandLine(new String[0]), undocumented);
        assertThat(undocumented).as("options without help text").isEmpty();
    }

    @Test
    void trainHelpShowsTheModelAndOptimiserFlags() {
        String help = Main.commandLine(new String[0]).getSubcommands().get("train").getUsageMessage();
        assertThat(help).contains("--lr").contains("Peak learning rate").contains("--n-layer").contains("Transformer blocks")
                .contains("--batch-size").contains("Sequences per micro-batch");
    }

    @Test
    void aSubcommandNamedFirstIsBuiltAloneAndKeepsItsFullName() {
        CommandLine train = Main.commandLine(new String[] {"train", "--help"});
        assertThat(train.getSubcommands()).containsOnlyKeys("train");
        assertThat(train.getSubcommands().get("train").getUsageMessage()).contains("Usage: jtrain train");
        assertThat(Main.commandLine(new String[] {"--help"}).getSubcommands())
                .containsOnlyKeys("train", "eval", "bench", "launch", "ckpt", "topo");
        assertThat(Main.commandLine(new String[] {"trian"}).getSubcommands()).as("a mistyped name gets the whole list").hasSize(6);
        var parsed = Main.commandLine(new String[] {"train", "--preset", "tiny"});
        parsed.parseArgs("train", "--preset", "tiny");
        assertThat(parsed.getParseResult().subcommand().originalArgs()).as("relaunched children get the whole command line")
                .containsExactly("train", "--preset", "tiny");
    }
}
