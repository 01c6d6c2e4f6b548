package dev.jtrain.spark;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Function1;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.stream.IntStream;

/**
 * Runs a jtrain job as a Spark barrier stage (SPIP "Barrier Execution Mode", SPARK-24374): every task is a rank and
 * all of them start together or not at all, which is what a collective job needs. Addresses and the store port are
 * exchanged with {@code BarrierTaskContext.allGather}, as XGBoost4J-Spark and PySpark's TorchDistributor do.
 *
 * <p>The stage needs as many free task slots as ranks ({@code local[N]}: N; a cluster: executors × cores); Spark
 * refuses to start a barrier stage it cannot fit. One rank per executor host is the layout to aim for; several per
 * host also work and share memory.
 */
public final class JtrainSpark {
    private JtrainSpark() { }

    /** One rank per partition of {@code text}, each training on its partition's lines. */
    public static List<RankReport> train(JavaRDD<String> text, SparkTrainOptions options) {
        if (!options.dataFromPartitions()) {
            throw new IllegalArgumentException("options.dataFromPartitions is false, but the data is an RDD; build the options"
                    + " with dataFromPartitions=true, or call train(sc, ranks, options) to train from the path in --data");
        }
        return run(text, options);
    }

    /** {@code ranks} ranks training on the data the train options name (a path every executor can read). */
    public static List<RankReport> train(JavaSparkContext sc, int ranks, SparkTrainOptions options) {
        if (ranks < 1) throw new IllegalArgumentException("ranks must be >= 1: ranks=" + ranks);
        if (options.dataFromPartitions()) {
            throw new IllegalArgumentException("options.dataFromPartitions is true, but there is no RDD; pass the text RDD,"
                    + " or build the options with dataFromPartitions=false and --data PATH");
        }
        return run(sc.parallelize(IntStream.range(0, ranks).mapToObj(Integer::toString).toList(), ranks), options);
    }

    private static List<RankReport> run(JavaRDD<String> partitions, SparkTrainOptions options) {
        BarrierTrainTask task = new BarrierTrainTask(options);
        List<RankReport> reports = new ArrayList<>(barrierMapPartitions(partitions, task::run, RankReport.class).collect());
        reports.sort(Comparator.comparingInt(RankReport::rank));
        return reports;
    }

    /** A function over one partition that may throw, serializable with its captures. */
    interface PartitionFunction<T, R> extends Serializable {
        Iterator<R> apply(Iterator<T> partition) throws Exception;
    }

    /** {@code rdd.barrier().mapPartitions(fn)}: the Java API has no {@code barrier()}, so this goes through Scala's. */
    static <T, R> JavaRDD<R> barrierMapPartitions(JavaRDD<T> rdd, PartitionFunction<T, R> fn, Class<R> type) {
        ClassTag<R> tag = ClassTag.apply(type);
        @SuppressWarnings("unchecked")
        Function1<scala.collection.Iterator<T>, scala.collection.Iterator<R>> f =
                (Function1<scala.collection.Iterator<T>, scala.collection.Iterator<R>> & Serializable) it -> {
                    try {
                        return CollectionConverters.asScala(fn.apply(CollectionConverters.asJava(it)));
                    } catch (RuntimeException e) {
                        throw e;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                };
        return new JavaRDD<>(rdd.rdd().barrier().mapPartitions(f, false, tag), tag);
    }
}
