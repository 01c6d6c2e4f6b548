package dev.jtrain.comm;

import dev.jtrain.comm.algo.CostModel;
import dev.jtrain.comm.algo.CostModelProbe.LinkCosts;
import dev.jtrain.comm.store.InMemoryStore;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LinkCostCacheTest {
    private final CostModel intra = new CostModel(2.5e-6, 1.0 / 9e9, 1.0 / 30e9, 32L << 20);
    private final CostModel inter = new CostModel(31.6e-6, 1.0 / 1.86e9, 1.0 / 121e9, 64L << 20);

    @Test
    void aPublishedFigureIsFoundUnderTheSameRanksPerHostOnly() {
        InMemoryStore store = new InMemoryStore(1000);
        assertThat(LinkCostCache.lookup(store, LinkCostCache.key(4))).isEmpty();
        LinkCostCache.publish(store, LinkCostCache.key(4), new LinkCosts(intra, inter));
        assertThat(LinkCostCache.lookup(store, LinkCostCache.key(4))).contains(new LinkCosts(intra, inter));
        assertThat(LinkCostCache.lookup(store, LinkCostCache.key(3))).isEmpty();
    }

    @Test
    void aMissingLinkClassStaysMissing() {
        assertThat(LinkCostCache.decode(LinkCostCache.encode(new LinkCosts(intra, null)))).isEqualTo(new LinkCosts(intra, null));
        assertThat(LinkCostCache.decode(LinkCostCache.encode(new LinkCosts(null, inter)))).isEqualTo(new LinkCosts(null, inter));
    }

    @Test
    void anUnknownFormatIsAClearError() {
        byte[] b = LinkCostCache.encode(new LinkCosts(intra, inter));
        b[0] = 9;
        assertThatThrownBy(() -> LinkCostCache.decode(b)).isInstanceOf(CommException.class).hasMessageContaining("unknown format");
        assertThatThrownBy(() -> LinkCostCache.decode(new byte[3])).isInstanceOf(CommException.class);
    }
}
