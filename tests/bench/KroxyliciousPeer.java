/*
 * tests/bench/KroxyliciousPeer.java — starts Kroxylicious (the Maven Central
 * artifact io.kroxylicious:kroxylicious-runtime, no filters) as a
 * pass-through peer for tests/bench/run.sh --peer-cmd; peers.sh compiles it.
 * The runtime jar has no main of its own (the kroxylicious-app CLI is not
 * on Maven Central), so this is the few lines that CLI runs:
 *
 *   java -cp CLASSES:LIB/* KroxyliciousPeer CONFIG.yaml
 *
 * Runs in the foreground until killed (the bench stops it).
 */
import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Features;

import java.nio.file.Files;
import java.nio.file.Path;

public final class KroxyliciousPeer {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: KroxyliciousPeer CONFIG.yaml");
            System.exit(2);
        }
        ConfigParser parser = new ConfigParser();
        Configuration config = parser.parseConfiguration(Files.readString(Path.of(args[0])));
        try (KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures())) {
            proxy.startup();
            proxy.block();
        }
    }
}
