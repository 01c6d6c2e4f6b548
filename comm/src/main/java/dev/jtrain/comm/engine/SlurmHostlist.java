package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;

import java.util.ArrayList;
import java.util.List;

/**
 * Slurm's compressed host and task lists, expanded without calling {@code scontrol} (it may not be on the compute
 * nodes' path, and a rank should not fork to learn its peers).
 *
 * <p>Host lists ({@code SLURM_STEP_NODELIST}): comma-separated entries, each a name with zero or more bracketed
 * range groups, e.g. {@code gpu-a[01-03,07],login1,rack[1-2]-n[1-2]}. Ranges keep their zero padding
 * ({@code [08-10]} gives {@code 08 09 10}); several groups in one name expand in order, last group fastest
 * (Slurm's multi-dimensional host lists).
 *
 * <p>Task counts ({@code SLURM_STEP_TASKS_PER_NODE}): comma-separated {@code count} or {@code count(xREPEAT)}, e.g.
 * {@code 2(x3),1} for nodes with 2, 2, 2 and 1 tasks.
 */
public final class SlurmHostlist {
    private SlurmHostlist() {}

    public static List<String> expand(String hostlist) {
        if (hostlist == null || hostlist.isBlank()) throw bad(hostlist, "empty host list");
        List<String> hosts = new ArrayList<>();
        for (String entry : splitTopLevel(hostlist.trim(), hostlist)) {
            if (entry.isEmpty()) throw bad(hostlist, "empty entry");
            hosts.addAll(expandEntry(entry, hostlist));
        }
        return List.copyOf(hosts);
    }

    public static List<Integer> expandTaskCounts(String tasksPerNode) {
        if (tasksPerNode == null || tasksPerNode.isBlank()) throw badTasks(tasksPerNode, "empty");
        List<Integer> counts = new ArrayList<>();
        for (String part : tasksPerNode.trim().split(",", -1)) {
            String p = part.trim();
            int open = p.indexOf('(');
            try {
                if (open < 0) {
                    counts.add(Integer.parseInt(p));
                } else {
                    if (!p.endsWith(")") || !p.startsWith("x", open + 1)) throw badTasks(tasksPerNode, "'" + p + "' is not N(xR)");
                    int count = Integer.parseInt(p.substring(0, open));
                    int repeat = Integer.parseInt(p.substring(open + 2, p.length() - 1));
                    if (repeat < 1) throw badTasks(tasksPerNode, "repeat < 1 in '" + p + "'");
                    for (int i = 0; i < repeat; i++) counts.add(count);
                }
            } catch (NumberFormatException e) {
                throw badTasks(tasksPerNode, "'" + p + "' is not a number");
            }
        }
        for (int c : counts) if (c < 0) throw badTasks(tasksPerNode, "negative count");
        return List.copyOf(counts);
    }

    /** Splits on commas that are not inside brackets. */
    private static List<String> splitTopLevel(String s, String whole) {
        List<String> parts = new ArrayList<>();
        int depth = 0, start = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '[') {
                if (++depth > 1) throw bad(whole, "nested '['");
            } else if (c == ']') {
                if (--depth < 0) throw bad(whole, "unmatched ']'");
            } else if (c == ',' && depth == 0) {
                parts.add(s.substring(start, i).trim());
                start = i + 1;
            }
        }
        if (depth != 0) throw bad(whole, "unclosed '['");
        parts.add(s.substring(start).trim());
        return parts;
    }

    /** One entry: literal text and range groups, expanded as a cartesian product (last group varies fastest). */
    private static List<String> expandEntry(String entry, String whole) {
        List<String> acc = List.of("");
        int i = 0;
        while (i < entry.length()) {
            int open = entry.indexOf('[', i);
            if (open < 0) {
                acc = append(acc, List.of(entry.substring(i)), whole);
                break;
            }
            int close = entry.indexOf(']', open);
            acc = append(acc, List.of(entry.substring(i, open)), whole);
            acc = append(acc, expandRanges(entry.substring(open + 1, close), whole), whole);
            i = close + 1;
        }
        return acc;
    }

    private static List<String> append(List<String> prefixes, List<String> suffixes, String whole) {
        if ((long) prefixes.size() * suffixes.size() > 1_000_000) throw bad(whole, "more than a million host names");
        List<String> out = new ArrayList<>(prefixes.size() * suffixes.size());
        for (String p : prefixes) for (String s : suffixes) out.add(p + s);
        return out;
    }

    private static List<String> expandRanges(String ranges, String whole) {
        List<String> out = new ArrayList<>();
        for (String r : ranges.split(",", -1)) {
            String t = r.trim();
            int dash = t.indexOf('-');
            if (t.isEmpty() || !t.chars().allMatch(ch -> Character.isDigit(ch) || ch == '-')) {
                throw bad(whole, "range '" + t + "' is not N or N-M");
            }
            if (dash < 0) {
                out.add(t);
                continue;
            }
            String lo = t.substring(0, dash), hi = t.substring(dash + 1);
            if (lo.isEmpty() || hi.isEmpty() || hi.indexOf('-') >= 0) throw bad(whole, "range '" + t + "' is not N-M");
            if (lo.length() > 18 || hi.length() > 18) throw bad(whole, "range '" + t + "' has numbers too long");
            long a = Long.parseLong(lo), b = Long.parseLong(hi);
            if (b < a) throw bad(whole, "range '" + t + "' runs backwards");
            if (b - a > 1_000_000) throw bad(whole, "range '" + t + "' is too large");
            int width = lo.length();
            for (long v = a; v <= b; v++) out.add(pad(v, width));
        }
        return out;
    }

    private static String pad(long v, int width) {
        String s = Long.toString(v);
        return s.length() >= width ? s : "0".repeat(width - s.length()) + s;
    }

    private static RendezvousConfigException bad(String list, String why) {
        return new RendezvousConfigException("slurm: cannot expand host list '" + list + "': " + why);
    }

    private static RendezvousConfigException badTasks(String list, String why) {
        return new RendezvousConfigException("slurm: cannot expand SLURM_STEP_TASKS_PER_NODE='" + list + "': " + why);
    }
}
