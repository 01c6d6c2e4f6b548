package dev.jtrain.comm.algo;

/** Returns on any rank only after every rank has entered. */
public interface BarrierAlgorithm extends Algorithm {
    @Override default Collective collective() { return Collective.BARRIER; }

    void barrier(CollectiveContext c);
}
