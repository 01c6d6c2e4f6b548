package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import dev.jtrain.comm.launch.RendezvousEnv;

/**
 * The job token every rank must present to the store and to its peers. Engines pass it through the environment
 * ({@code srun} and {@code sbatch} export the caller's environment; {@code mpirun -x JTRAIN_JOB_TOKEN}; a Kubernetes
 * Secret): a value derived from the job id would be known to every user of the cluster.
 */
final class JobToken {
    private JobToken() {}

    static String require(EngineEnv env, String engine, String howToPass) {
        String t = env.get(RendezvousEnv.JOB_TOKEN);
        if (t == null) {
            throw new RendezvousConfigException(engine + ": environment variable " + RendezvousEnv.JOB_TOKEN
                    + " is not set; every rank needs the same secret, e.g. `export " + RendezvousEnv.JOB_TOKEN
                    + "=$(openssl rand -hex 16)` before starting the job" + howToPass);
        }
        return t;
    }
}
