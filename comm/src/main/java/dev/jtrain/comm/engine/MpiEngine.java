package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.launch.RendezvousEnv;

import java.util.List;
import java.util.Optional;

/**
 * Ranks started by {@code mpirun}/{@code mpiexec}: Open MPI ({@code OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE})
 * or MPICH and Intel MPI's Hydra ({@code PMI_RANK/PMI_SIZE} with {@code MPI_LOCALRANKID/MPI_LOCALNRANKS}). Checked
 * before Slurm: inside {@code salloc ... mpirun} the Slurm variables describe the allocation's nodes, not the ranks.
 *
 * <p>MPI says nothing about where rank 0 runs, so the store is placed by the first rule that applies:
 * <ol>
 *   <li>{@code MASTER_ADDR} is set ({@code mpirun -x MASTER_ADDR=host}): it names rank 0's host and rank 0 hosts
 *       the store (torch's {@code env://} convention);</li>
 *   <li>every rank is on this host: loopback, rank 0 hosts;</li>
 *   <li>inside a Slurm allocation: the allocation's first node, hosted by the process there with local rank 0
 *       (mpirun maps ranks onto the allocation's nodes in order);</li>
 *   <li>otherwise the job can not meet, and the error says to pass {@code MASTER_ADDR}.</li>
 * </ol>
 * The port is {@code MASTER_PORT} or derived from the MPI job id ({@link StorePort}), qualified by the Slurm job id
 * inside an allocation; a launcher that exports no job id of its own (MPICH's Hydra may not) derives it from the Slurm
 * job id alone.
 */
public final class MpiEngine implements ClusterEngine {
    static final String NAME = "mpi";
    private static final String HOW = " (mpirun passes variables to ranks with -x: `mpirun -x " + RendezvousEnv.JOB_TOKEN + " ...`)";

    @Override public String name() { return NAME; }

    @Override
    public boolean applies(EngineEnv env) {
        return env.has("OMPI_COMM_WORLD_SIZE") || (env.has("PMI_SIZE") && env.has("MPI_LOCALNRANKS"));
    }

    @Override
    public Optional<RankLayout> ranks(EngineEnv env) {
        boolean ompi = env.has("OMPI_COMM_WORLD_SIZE");
        int world = env.intVar(NAME, ompi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE", 1, Integer.MAX_VALUE);
        int rank = env.intVar(NAME, ompi ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK", 0, world - 1);
        int localSize = env.intVar(NAME, ompi ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "MPI_LOCALNRANKS", 1, world);
        int localRank = env.intVar(NAME, ompi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "MPI_LOCALRANKID", 0, localSize - 1);
        String token = JobToken.require(env, NAME, HOW);
        String mpiJob = firstOf(env, "OMPI_MCA_orte_ess_jobid", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_JOBID",
                "PMI_KVSNAME");
        String slurmJob = env.get("SLURM_JOB_ID");
        String jobKey = mpiJob != null && slurmJob != null ? slurmJob + "/" + mpiJob : mpiJob != null ? mpiJob : slurmJob;
        int port = StorePort.ofKey(env, NAME, jobKey);
        StoreAddress store;
        if (env.has(RendezvousEnv.MASTER_ADDR)) {
            store = new StoreAddress(env.get(RendezvousEnv.MASTER_ADDR), port, rank == 0);
        } else if (localSize == world) {
            store = new StoreAddress("127.0.0.1", port, rank == 0);
        } else if (env.has("SLURM_JOB_NODELIST")) {
            List<String> nodes = SlurmHostlist.expand(env.get("SLURM_JOB_NODELIST"));
            String first = nodes.getFirst();
            boolean here = localRank == 0 && EngineEnv.shortName(env.hostName()).equals(EngineEnv.shortName(first));
            store = new StoreAddress(first, port, here);
        } else {
            throw new RendezvousConfigException(NAME + ": the " + world + " ranks span several hosts and nothing says where"
                    + " rank 0 runs; pass its host: `mpirun -x " + RendezvousEnv.MASTER_ADDR + "=<host of rank 0> -x "
                    + RendezvousEnv.JOB_TOKEN + " ...`");
        }
        int restart = env.intVar(NAME, RendezvousEnv.RESTART_COUNT, 0, Integer.MAX_VALUE, 0);
        return Optional.of(new RankLayout(NAME, rank, world, localRank, localSize, -1, -1, store, token, restart,
                jobKey == null ? "" : jobKey));
    }

    private static String firstOf(EngineEnv env, String... names) {
        for (String n : names) if (env.has(n)) return env.get(n);
        return null;
    }
}
