package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.launch.RendezvousEnv;

import java.util.Optional;

/**
 * Pods on Kubernetes, one per node, which start their node's ranks through jtrain's launcher:
 * <ul>
 *   <li>the Kubeflow trainer's torchrun variables: {@code PET_NNODES}, {@code PET_NODE_RANK},
 *       {@code PET_NPROC_PER_NODE}, {@code PET_MASTER_ADDR}, {@code PET_MASTER_PORT};</li>
 *   <li>an Indexed Job (or JobSet): {@code JOB_COMPLETION_INDEX} is the node rank, and the manifest sets
 *       {@code JTRAIN_NNODES}, {@code MASTER_ADDR} (pod 0's name under the headless Service) and optionally
 *       {@code MASTER_PORT} (default 29500: every pod has its own network namespace, so a fixed port can not collide)
 *       and {@code JTRAIN_NPROC_PER_NODE}.</li>
 * </ul>
 * The token comes from a Secret as {@code JTRAIN_JOB_TOKEN}. See {@code deploy/kubernetes/}.
 */
public final class KubernetesEngine implements ClusterEngine {
    static final String NAME = "kubernetes";
    static final int DEFAULT_PORT = 29500;

    @Override public String name() { return NAME; }

    @Override public boolean applies(EngineEnv env) { return env.has("PET_NNODES") || env.has("JOB_COMPLETION_INDEX"); }

    @Override public Optional<RankLayout> ranks(EngineEnv env) { return Optional.empty(); }

    @Override
    public Optional<NodeLayout> node(EngineEnv env) {
        String token = env.get(RendezvousEnv.JOB_TOKEN);
        if (env.has("PET_NNODES")) {
            String nn = env.get("PET_NNODES");
            if (nn.contains(":")) { // torchrun's elastic MIN:MAX; jtrain restarts at a fixed size
                String[] mm = nn.split(":", 2);
                if (!mm[0].equals(mm[1])) {
                    throw new RendezvousConfigException(NAME + ": PET_NNODES=" + nn + " asks for an elastic node count; "
                            + "jtrain runs a fixed number of nodes: set min = max");
                }
                nn = mm[0];
            }
            int nnodes;
            try {
                nnodes = Integer.parseInt(nn);
            } catch (NumberFormatException e) {
                throw new RendezvousConfigException(NAME + ": PET_NNODES='" + env.get("PET_NNODES") + "' is not a node count", e);
            }
            if (nnodes < 1) throw new RendezvousConfigException(NAME + ": PET_NNODES=" + nnodes + " must be >= 1");
            int nodeRank = env.intVar(NAME, "PET_NODE_RANK", 0, nnodes - 1);
            String nproc = env.get("PET_NPROC_PER_NODE", "0");
            // a count, or torchrun's "auto" / "cpu" / "gpu", which leave the count to --nproc-per-node
            int perNode = !nproc.isEmpty() && nproc.chars().allMatch(Character::isDigit)
                    ? env.intVar(NAME, "PET_NPROC_PER_NODE", 0, Integer.MAX_VALUE) : 0;
            String master = env.get("PET_MASTER_ADDR");
            if (master == null) throw new RendezvousConfigException(NAME + ": PET_MASTER_ADDR is not set");
            int port = env.intVar(NAME, "PET_MASTER_PORT", 1, 65535, DEFAULT_PORT);
            return Optional.of(new NodeLayout(NAME, nodeRank, nnodes, perNode, master, port, token));
        }
        int nnodes = env.intVar(NAME, RendezvousEnv.NNODES, 1, Integer.MAX_VALUE);
        int nodeRank = env.intVar(NAME, "JOB_COMPLETION_INDEX", 0, nnodes - 1);
        String master = env.get(RendezvousEnv.MASTER_ADDR);
        if (master == null) {
            throw new RendezvousConfigException(NAME + ": MASTER_ADDR is not set; in an Indexed Job set it to pod 0's DNS"
                    + " name, <job>-0.<headless service>");
        }
        int port = env.intVar(NAME, RendezvousEnv.MASTER_PORT, 1, 65535, DEFAULT_PORT);
        int perNode = env.intVar(NAME, NPROC_PER_NODE, 0, Integer.MAX_VALUE, 0);
        return Optional.of(new NodeLayout(NAME, nodeRank, nnodes, perNode, master, port, token));
    }

    static final String NPROC_PER_NODE = "JTRAIN_NPROC_PER_NODE";
}
