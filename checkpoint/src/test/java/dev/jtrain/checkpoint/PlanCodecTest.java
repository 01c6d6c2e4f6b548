package dev.jtrain.checkpoint;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The save plans' wire format: every field survives a round trip, and a damaged message fails with a clear error. */
class PlanCodecTest {
    /** Edge values: a scalar (no dimensions), an empty plan, non-ASCII names, offsets beyond 2^31, both replication flags. */
    private static LocalPlan local(int rank, int world) {
        List<PlannedShard> shards = new ArrayList<>();
        shards.add(new PlannedShard("model/transformer.wte.weight", new long[]{50304, 768}, "F32", 0, 50304L * 768, true));
        shards.add(new PlannedShard("optim/step", new long[]{}, "F32", 0, 1, false));
        shards.add(new PlannedShard("model/größe/μ", new long[]{3, 1L << 33}, "F32", (1L << 33) + rank, 7 + rank, rank % 2 == 0));
        return new LocalPlan(rank, world, shards);
    }

    @Test
    void aLocalPlanRoundTripsFieldForField() {
        for (LocalPlan p : List.of(local(0, 3), local(2, 3), new LocalPlan(1, 5, List.of()))) {
            LocalPlan back = PlanCodec.decodeLocal(PlanCodec.encode(p));
            assertThat(back).isEqualTo(p); // the plan cache keys on this equality
            for (int i = 0; i < p.shards().size(); i++) {
                PlannedShard a = p.shards().get(i), b = back.shards().get(i);
                assertThat(b.item()).isEqualTo(a.item());
                assertThat(b.shape()).containsExactly(a.shape());
                assertThat(new Object[]{b.dtype(), b.offset(), b.length(), b.replicated()})
                        .containsExactly(a.dtype(), a.offset(), a.length(), a.replicated());
            }
        }
    }

    @Test
    void aReplyRoundTripsItsPlanOrItsError() {
        List<LocalPlan> locals = List.of(local(0, 3), local(1, 3), local(2, 3));
        GlobalPlan plan = SavePlanner.merge(locals);
        SavePlanner.Reply back = PlanCodec.decodeReply(PlanCodec.encode(new SavePlanner.Reply(plan, null)));
        assertThat(back.error()).isNull();
        assertThat(back.plan().worldSize()).isEqualTo(3);
        assertThat(back.plan().writes()).isEqualTo(plan.writes());
        assertThat(back.plan().layout()).isEqualTo(plan.layout());
        assertThat(back.plan().hashCode()).as("ranks cross-check the plan's hash at commit").isEqualTo(plan.hashCode());

        char[] longText = new char[70_000]; // past DataOutput.writeUTF's 64 KiB limit
        Arrays.fill(longText, 'é');
        String error = "item x has global shape [2] on rank 0 but [3] on rank 1 " + new String(longText);
        SavePlanner.Reply failed = PlanCodec.decodeReply(PlanCodec.encode(new SavePlanner.Reply(null, error)));
        assertThat(failed.plan()).isNull();
        assertThat(failed.error()).isEqualTo(error);
    }

    @Test
    void aDamagedMessageFailsWithWhatIsWrong() {
        byte[] good = PlanCodec.encode(local(1, 2));
        assertThatThrownBy(() -> PlanCodec.decodeLocal(Arrays.copyOf(good, good.length - 5)))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("local plan").hasMessageContaining("cut short");
        byte[] longer = Arrays.copyOf(good, good.length + 2);
        assertThatThrownBy(() -> PlanCodec.decodeLocal(longer))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("2 bytes left over");
        byte[] otherFormat = good.clone();
        otherFormat[0] = 9;
        assertThatThrownBy(() -> PlanCodec.decodeLocal(otherFormat))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("format 9").hasMessageContaining("same jtrain");
        byte[] hugeCount = good.clone();
        hugeCount[9] = 0x7f; // the shard count (after format, rank, world size) now claims ~2^31 shards
        assertThatThrownBy(() -> PlanCodec.decodeLocal(hugeCount))
                .isInstanceOf(CheckpointException.class).hasMessageContaining("shards count");
    }
}
