package dev.jtrain.autograd;

import dev.jtrain.tensor.Shape;
import dev.jtrain.tensor.StepArena;
import dev.jtrain.tensor.Tensor;
import dev.jtrain.tensor.kernel.VectorOps;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Reverse-mode backward pass. Iterative throughout (no recursion: a deep model must not overflow the stack):
 * <ol>
 *   <li>walk the graph from the root with an explicit stack, counting for each node how many consumers will
 *       send it a gradient;</li>
 *   <li>run nodes from a ready queue ordered by priority (latest-created first; leaf accumulators first of all),
 *       summing incoming gradients per node and releasing a node when its count reaches zero.</li>
 * </ol>
 * A leaf's accumulator therefore runs exactly once per backward, after all of its contributions.
 * Reentrant: activation checkpointing runs a nested backward from inside a node.
 */
public final class Engine {
    private Engine() {}

    public static void backward(Tensor root, Tensor gradRoot) {
        if (!Arrays.equals(root.shape(), gradRoot.shape()))
            throw new IllegalArgumentException("gradient shape " + Shape.str(gradRoot.shape()) + " != output shape " + Shape.str(root.shape()));
        Node start = Node.edge(root);
        if (start == null)
            throw new IllegalStateException("backward() on a tensor that does not require grad: " + root
                    + " (was it computed under no-grad, or from inputs without requiresGrad?)");
        Map<Node, Integer> dependencies = countDependencies(start);
        Map<Node, Tensor> pending = new IdentityHashMap<>();
        PriorityQueue<Node> ready = new PriorityQueue<>((a, b) -> Long.compare(b.priority(), a.priority()));
        hold(pending, start, gradRoot);
        ready.add(start);
        try (var g = GradMode.noGrad()) {
            while (!ready.isEmpty()) {
                Node node = ready.poll();
                Tensor grad = pending.remove(node);
                // A node no path sent a gradient to still runs through the queue (doing nothing) so that the
                // dependency counts of its inputs stay right.
                Tensor[] inputGrads = grad == null ? new Tensor[0] : node.apply(grad == ACCUMULATED ? null : grad);
                node.releaseSaved();
                for (int i = 0; i < node.next.length; i++) {
                    Node nx = node.next[i];
                    if (nx == null) continue;
                    Tensor gi = i < inputGrads.length ? inputGrads[i] : null;
                    if (gi != null) hold(pending, nx, gi);
                    int left = dependencies.merge(nx, -1, Integer::sum);
                    if (left == 0) ready.add(nx);
                }
                // A gradient a node returns is either its own new array or a view of the one it was given (reshape,
                // add). Each pending gradient holds its storage once, so the node's own hold on a new array goes,
                // and so does this node's hold on its input gradient: the step arena can reuse them at once.
                for (int i = 0; i < inputGrads.length; i++) {
                    Tensor gi = inputGrads[i];
                    if (gi != null && gi != Node.ACCUMULATED_IN_PLACE && gi.data() != grad.data() && firstOccurrence(inputGrads, i))
                        StepArena.release(gi.data());
                }
                if (grad != null && grad != ACCUMULATED) StepArena.release(grad.data());
            }
        }
    }

    /** Adds g to the gradient pending for {@code node}, holding its storage (see {@link StepArena#retain}). */
    private static void hold(Map<Node, Tensor> pending, Node node, Tensor g) {
        Tensor prev = pending.get(node);
        if (g == Node.ACCUMULATED_IN_PLACE) { // the node added it into the leaf's gradient itself
            if (prev != null && prev != ACCUMULATED)
                throw new IllegalStateException(node.name() + ": a contribution was added in place while another is held");
            pending.put(node, ACCUMULATED);
            return;
        }
        if (node instanceof AccumulateGrad acc && (prev == null || prev == ACCUMULATED) && acc.accumulateNow(g)) {
            pending.put(node, ACCUMULATED);
            return;
        }
        if (prev == null) {
            StepArena.retain(g.data());
            pending.put(node, g);
        } else {
            pending.put(node, sum(prev, g));
            StepArena.release(prev.data());
        }
    }

    /** Pending "gradient" of a leaf accumulator whose contributions went into the leaf as they came (hooks still due). */
    private static final Tensor ACCUMULATED = Tensor.scalar(0f);

    private static boolean firstOccurrence(Tensor[] grads, int i) {
        for (int j = 0; j < i; j++) if (grads[j] != null && grads[j].data() == grads[i].data()) return false;
        return true;
    }

    private static Map<Node, Integer> countDependencies(Node start) {
        Map<Node, Integer> deps = new IdentityHashMap<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        deps.put(start, 0);
        stack.push(start);
        while (!stack.isEmpty()) {
            Node n = stack.pop();
            for (Node nx : n.next) {
                if (nx == null) continue;
                Integer c = deps.get(nx);
                if (c == null) {
                    deps.put(nx, 1);
                    stack.push(nx);
                } else deps.put(nx, c + 1);
            }
        }
        return deps;
    }

    /** Fresh sum: incoming gradients may be shared between branches, so never add in place into one. */
    private static Tensor sum(Tensor a, Tensor b) {
        Tensor ac = a.contiguous(), bc = b.contiguous();
        Tensor out = Tensor.empty(a.shape());
        VectorOps.add(ac.data(), ac.offset(), bc.data(), bc.offset(), out.data(), 0, out.numel());
        return out;
    }
}
