/**
 * Collective algorithms, one class per collective x algorithm, over the point-to-point
 * {@link Transport} (Gloo's layout: {@code allreduce_ring.h},
 * {@code allreduce_halving_doubling.h}, ...). p ranks, n bytes, α latency per message, β seconds per byte,
 * γ seconds per byte reduced; p' = largest power of two &lt;= p. Every algorithm works for any p.
 *
 * <pre>
 * collective      name (JTRAIN_ALGO)   class                           cost
 * all-reduce      ring                 RingAllReduce                   2(p-1)α + 2((p-1)/p)nβ + ((p-1)/p)nγ
 *                 halvingdoubling      HalvingDoublingAllReduce        2log2(p')α + 2((p'-1)/p')nβ + ((p'-1)/p')nγ (+ fold)
 *                 recursivedoubling    RecursiveDoublingAllReduce      log2(p')(α + nβ + nγ) (+ fold)
 *                 doubletree           DoubleBinaryTreeAllReduce       2(d+k-1)(3α + 3(n/2k)β) + (d+k-1)(n/k)γ
 *                 tree                 BinomialTreeAllReduce           2ceil(log2 p)(α + nβ) + ceil(log2 p)nγ
 *                 ordered              OrderedAllReduce (fixed order)  2(p-1)α + 2((p-1)/p)nβ + ((p-1)/p)nγ
 *                 naive                NaiveAllReduce (reference)      2(p-1)(α + nβ) + (p-1)nγ
 * broadcast       binomial             BinomialBroadcast               ceil(log2 p)(α + nβ)
 *                 chain                ChainBroadcast                  (p-2+k)(α + (n/k)β)
 * reduce          binomial             BinomialReduce                  ceil(log2 p)(α + nβ + nγ)
 * all-gather      ring                 RingAllGather                   (p-1)α + ((p-1)/p)nβ
 *                 recursivedoubling    RecursiveDoublingAllGather      log2(p')α + ((p-1)/p)nβ (+ fold)
 * reduce-scatter  ring                 RingReduceScatter               (p-1)α + ((p-1)/p)n(β + γ)
 *                 recursivehalving     RecursiveHalvingReduceScatter   log2(p')α + ((p'-1)/p')n(β + γ) (+ fold)
 * gather          linear               LinearGather                    (p-1)α + ((p-1)/p)nβ
 *                 binomial             BinomialGather                  ceil(log2 p)α + ((p-1)/p)nβ + (n/2)β (forward)
 * scatter         linear               LinearScatter                   (p-1)α + ((p-1)/p)nβ
 *                 binomial             BinomialScatter                 ceil(log2 p)α + ((p-1)/p)nβ + (n/2)β (forward)
 * all-to-all      pairwise             PairwiseAllToAll                (p-1)(α + (n/p)β)
 * barrier         dissemination        DisseminationBarrier            ceil(log2 p)α
 * </pre>
 * "fold": non-powers of two first fold the rem = p - p' extra ranks into partners (2 more messages of n bytes).
 * k = number of chunks ({@code chunkBytes}); every chunk adds α. The {@link AlgorithmSelector}
 * evaluates these with the measured {@link CostModel}; {@code JTRAIN_ALGO=allreduce:ring}
 * forces one. Reductions run in {@link ReduceKernels} (Vector API, one class per dtype); a
 * reduce-scatter step folds the received block in as it arrives where the transport can
 * ({@link CollectiveContext#sendRecvReduce}), so nβ and nγ overlap and the block is read once.
 */
package dev.jtrain.comm.algo;

import dev.jtrain.comm.transport.Transport;
