package dev.jtrain.comm.engine;

import dev.jtrain.comm.launch.RendezvousConfigException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SlurmHostlistTest {
    @Test
    void expandsRangesKeepingZeroPaddingAndDashedNames() {
        assertThat(SlurmHostlist.expand("jt-node[1-2]")).containsExactly("jt-node1", "jt-node2");
        assertThat(SlurmHostlist.expand("gpu-a[08-10,13],login-1")).containsExactly("gpu-a08", "gpu-a09", "gpu-a10", "gpu-a13", "login-1");
        assertThat(SlurmHostlist.expand("n[098-101]")).containsExactly("n098", "n099", "n100", "n101");
        assertThat(SlurmHostlist.expand("single")).containsExactly("single");
        assertThat(SlurmHostlist.expand("a,b-2,c[3]")).containsExactly("a", "b-2", "c3");
        assertThat(SlurmHostlist.expand("n[8-10]")).containsExactly("n8", "n9", "n10");
        assertThat(SlurmHostlist.expand("n[1-2]-ib")).containsExactly("n1-ib", "n2-ib");
    }

    @Test
    void expandsSeveralGroupsInOneNameLastFastest() {
        assertThat(SlurmHostlist.expand("rack[1-2]-n[1-2]")).containsExactly("rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2");
    }

    @Test
    void refusesMalformedListsNamingThem() {
        // a trailing comma inside brackets, a number past a long, and a product of groups past a million names
        for (String bad : List.of("n[1-", "n[2-1]", "n[a-b]", "n]1[", "", "a,,b", "n[[1]]", "n[1,]",
                "n[1-99999999999999999999]", "a[0-999999]b[0-99999]")) {
            assertThatThrownBy(() -> SlurmHostlist.expand(bad)).isInstanceOf(RendezvousConfigException.class)
                    .hasMessageContaining("host list '" + bad + "'");
        }
    }

    @Test
    void expandsTaskCountsWithRepeats() {
        assertThat(SlurmHostlist.expandTaskCounts("2(x3),1")).containsExactly(2, 2, 2, 1);
        assertThat(SlurmHostlist.expandTaskCounts("3,1")).containsExactly(3, 1);
        assertThat(SlurmHostlist.expandTaskCounts("4")).containsExactly(4);
        assertThatThrownBy(() -> SlurmHostlist.expandTaskCounts("2(3)")).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("2(3)");
        assertThatThrownBy(() -> SlurmHostlist.expandTaskCounts("3,")).isInstanceOf(RendezvousConfigException.class)
                .hasMessageContaining("'3,'");
    }
}
