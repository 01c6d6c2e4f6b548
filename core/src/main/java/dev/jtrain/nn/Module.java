package dev.jtrain.nn;

import dev.jtrain.tensor.Tensor;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * A tree of layers owning named parameters (torch.nn.Module). Names are dotted paths
 * ({@code transformer.h.0.attn.c_attn.weight}), in registration order.
 */
public abstract class Module {
    private final Map<String, Tensor> parameters = new LinkedHashMap<>();
    private final Map<String, Module> children = new LinkedHashMap<>();
    private boolean training = true;

    protected final Tensor registerParameter(String name, Tensor value) {
        if (parameters.containsKey(name) || children.containsKey(name))
            throw new IllegalArgumentException("duplicate name '" + name + "' in " + getClass().getSimpleName());
        value.requiresGrad(true);
        parameters.put(name, value);
        return value;
    }

    protected final <M extends Module> M registerModule(String name, M module) {
        if (parameters.containsKey(name) || children.containsKey(name))
            throw new IllegalArgumentException("duplicate name '" + name + "' in " + getClass().getSimpleName());
        children.put(name, module);
        return module;
    }

    /** Registers a child from outside (containers such as a block list). */
    public final <M extends Module> M registerChild(String name, M module) {
        return registerModule(name, module);
    }

    /**
     * All parameters by full name, each tensor once (a tied weight keeps its first name), in registration
     * order (depth-first, pre-order, iterative).
     */
    public final Map<String, Tensor> namedParameters() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        Set<Tensor> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<Map.Entry<String, Module>> stack = new ArrayDeque<>();
        stack.push(Map.entry("", this));
        while (!stack.isEmpty()) {
            var e = stack.pop();
            String prefix = e.getKey();
            Module m = e.getValue();
            for (var p : m.parameters.entrySet())
                if (seen.add(p.getValue())) out.put(prefix + p.getKey(), p.getValue());
            var kids = new ArrayList<>(m.children.entrySet());
            for (int i = kids.size() - 1; i >= 0; i--)
                stack.push(Map.entry(prefix + kids.get(i).getKey() + ".", kids.get(i).getValue()));
        }
        return out;
    }

    public final long parameterCount() {
        long n = 0;
        for (Tensor t : namedParameters().values()) n += t.numel();
        return n;
    }

    public final boolean isTraining() {
        return training;
    }

    /** Sets training mode here and in every descendant (dropout is active only in training). */
    public final void train(boolean on) {
        ArrayDeque<Module> stack = new ArrayDeque<>();
        stack.push(this);
        while (!stack.isEmpty()) {
            Module m = stack.pop();
            m.training = on;
            m.children.values().forEach(stack::push);
        }
    }

    /** Clears every parameter's gradient (sets it to zero in place when it lives in a flat buffer). */
    public void zeroGrad() {
        for (Tensor p : namedParameters().values()) {
            Tensor g = p.grad();
            if (g != null) Arrays.fill(g.data(), g.offset(), g.offset() + g.numel(), 0f);
        }
    }
}
