package dev.jtrain.cli;

import java.nio.file.Files;
import java.nio.file.Path;

/** The embedded default corpus: the running JDK's own Java sources, present in every full JDK install. */
final class DefaultData {
    private DefaultData() {}

    static Path jdkSources() {
        Path zip = Path.of(System.getProperty("java.home"), "lib", "src.zip");
        if (!Files.isRegularFile(zip))
            throw new IllegalArgumentException("the default data set is the JDK's Java sources, but " + zip
                    + " does not exist (a JRE or a JDK without sources?). Pass --data PATH with your own text, "
                    + "or install a full JDK 25 (e.g. Temurin) which ships lib/src.zip.");
        return zip;
    }
}
