package dev.jtrain.cli;

import dev.jtrain.checkpoint.storage.posix.CheckpointDirectory;
import dev.jtrain.checkpoint.CheckpointInspector;
import dev.jtrain.checkpoint.CheckpointMetadata;
import dev.jtrain.checkpoint.Checkpointer;
import dev.jtrain.checkpoint.CheckpointerOptions;
import dev.jtrain.checkpoint.LoadOptions;
import dev.jtrain.parallel.DataParallelOptions;
import dev.jtrain.parallel.SingleProcess;
import dev.jtrain.gpt.Gpt;
import dev.jtrain.gpt.GptConfig;
import dev.jtrain.gpt.GptWeights;
import dev.jtrain.nn.FlatParameters;
import dev.jtrain.tensor.io.SafetensorsWriter;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code jtrain ckpt ls | inspect | verify | consolidate}: look at and convert distributed checkpoints offline. */
@Command(name = "ckpt", mixinStandardHelpOptions = true, description = "Inspect, verify and convert distributed checkpoints.",
        subcommands = {CkptCommand.Ls.class, CkptCommand.Inspect.class, CkptCommand.Verify.class, CkptCommand.Consolidate.class})
final class CkptCommand {
    private static String mib(long bytes) {
        return String.format("%.1f MiB", bytes / 1048576.0);
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List the checkpoints under a --ckpt-dir.")
    static final class Ls implements Callable<Integer> {
        @Parameters(index = "0", description = "Checkpoint root (the --ckpt-dir of a run).") Path root;

        @Override
        public Integer call() throws IOException {
            var latest = CheckpointDirectory.latest(root);
            List<Path> steps = CheckpointDirectory.steps(root);
            if (steps.isEmpty()) System.out.println("no checkpoints under " + root);
            for (Path p : steps) {
                boolean committed = CheckpointDirectory.isCommitted(p);
                String mark = latest.isPresent() && latest.get().getFileName().equals(p.getFileName()) ? "  <- latest" : "";
                if (!committed) {
                    System.out.printf("%-14s INCOMPLETE (no metadata.json: interrupted or failed save)%s%n", p.getFileName(), mark);
                    continue;
                }
                CheckpointMetadata m = CheckpointMetadata.read(p);
                System.out.printf("%-14s step %-8d %d rank(s)  %10s  %4d items  %s%s%n", p.getFileName(), m.step(), m.worldSize(),
                        mib(m.totalBytes()), m.items().size(), m.createdUtc(), mark);
            }
            if (Files.isDirectory(root))
                try (var s = Files.list(root)) {
                    for (Path p : s.filter(q -> q.getFileName().toString().matches("step-\\d+\\.unusable.*")).sorted().toList())
                        System.out.printf("%-22s SET ASIDE (failed to load on --resume; kept for inspection: jtrain ckpt verify %s)%n",
                                p.getFileName(), p);
                }
            return 0;
        }
    }

    @Command(name = "inspect", mixinStandardHelpOptions = true, description = "Show a checkpoint's metadata: parts, tensors, pieces, files.")
    static final class Inspect implements Callable<Integer> {
        @Parameters(index = "0", description = "A step directory, or a checkpoint root (its latest).") Path dir;

        @Override
        public Integer call() throws IOException {
            Path d = CheckpointDirectory.resolve(dir, -1);
            CheckpointMetadata m = CheckpointMetadata.read(d);
            System.out.printf("%s: format %s v%d, step %d, saved by %d rank(s), %s%n", d, m.format(), m.version(), m.step(),
                    m.worldSize(), m.createdUtc());
            m.state().forEach((k, v) -> System.out.printf("  part %-10s metadata (rank 0): %s%n", k, v.isEmpty() ? "{}" : v.get(0)));
            m.files().forEach((f, e) -> System.out.printf("  file %s  rank %d  %s%n", f, e.rank(), mib(e.bytes())));
            m.items().forEach((name, it) -> System.out.printf("  %-50s %s%s  %d piece(s), written by ranks %s%n", name, it.dtype(),
                    Arrays.toString(it.shape()), it.pieces().size(),
                    it.pieces().stream().map(CheckpointMetadata.Piece::writer).distinct().sorted().toList()));
            return 0;
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true, description = "Check every piece (header, size, CRC32C) and that pieces tile every tensor.")
    static final class Verify implements Callable<Integer> {
        @Parameters(index = "0", description = "A step directory, or a checkpoint root (its latest).") Path dir;

        @Override
        public Integer call() throws IOException {
            Path d = CheckpointDirectory.resolve(dir, -1);
            long t0 = System.nanoTime();
            CheckpointInspector.Verification v = CheckpointInspector.verify(d);
            double s = (System.nanoTime() - t0) / 1e9;
            if (v.ok()) {
                System.out.printf("OK %s: %d items, %d pieces, %s verified (CRC32C) in %.2f s%n", d, v.items(), v.pieces(), mib(v.bytes()), s);
                return 0;
            }
            System.out.printf("CORRUPT %s: %d problem(s)%n", d, v.problems().size());
            v.problems().forEach(p -> System.out.println("  " + p));
            return 1;
        }
    }

    @Command(name = "consolidate", mixinStandardHelpOptions = true,
            description = "Write one safetensors file. A jtrain GPT checkpoint becomes Hugging Face GPT-2 weights + config.json "
                    + "(loadable by `jtrain eval --init-from`); anything else keeps its item names.")
    static final class Consolidate implements Callable<Integer> {
        @Parameters(index = "0", description = "A step directory, or a checkpoint root (its latest).") Path dir;
        @Option(names = "--out", required = true, description = "Output .safetensors file.") Path out;

        @Override
        public Integer call() throws Exception {
            Path d = CheckpointDirectory.resolve(dir, -1);
            CheckpointMetadata m = CheckpointMetadata.read(d);
            Map<String, String> trainer = m.state().getOrDefault("trainer", List.of()).stream().findFirst().orElse(Map.of());
            if (out.toAbsolutePath().getParent() != null) Files.createDirectories(out.toAbsolutePath().getParent());
            if (trainer.containsKey("gpt.n_layer")) {
                GptConfig cfg = new GptConfig(Integer.parseInt(trainer.get("gpt.n_layer")), Integer.parseInt(trainer.get("gpt.n_head")),
                        Integer.parseInt(trainer.get("gpt.n_embd")), Integer.parseInt(trainer.get("gpt.block_size")),
                        Integer.parseInt(trainer.get("gpt.vocab_size")), Float.parseFloat(trainer.get("gpt.dropout")),
                        Boolean.parseBoolean(trainer.get("gpt.bias")));
                Gpt model = new Gpt(cfg, 0);
                var flat = FlatParameters.of(model);
                try (Checkpointer c = new Checkpointer(null, CheckpointerOptions.fromSystemProperties())) { // same verified load path as training (CRC32C, shapes)
                    c.load(d, Map.of("model", new SingleProcess(flat, DataParallelOptions.defaults()).modelState()), LoadOptions.latest());
                }
                GptWeights.saveHuggingFace(model, out);
                System.out.printf("wrote %s and config.json (GPT-2 names, %d layers, width %d) from %s%n", out, cfg.nLayer(), cfg.nEmbd(), d);
                return 0;
            }
            SafetensorsWriter w = new SafetensorsWriter();
            for (var e : m.items().entrySet())
                w.put(e.getKey(), e.getValue().shape(), CheckpointInspector.readItem(d, m, e.getKey()));
            w.metadata("format", "pt").metadata("source", d.toString()).write(out);
            System.out.printf("wrote %s: %d tensors from %s%n", out, m.items().size(), d);
            return 0;
        }
    }
}
