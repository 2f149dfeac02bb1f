package dedupe

import "testing"

// TestLayoutSpreadsSlots checks the partition tags: CRC16 as Redis
// computes it, and each partition's slot in its own equal range.
func TestLayoutSpreadsSlots(t *testing.T) {
	// The example of the Redis Cluster specification.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x; want 0x31c3", got)
	}
	for _, parts := range []int{1, 3, 16, 100, 1024} {
		l := newLayout("x:", parts)
		for p, tag := range l.tags {
			slot := int(crc16(tag[1:len(tag)-1])) % clusterSlots
			if lo, hi := p*clusterSlots/parts, (p+1)*clusterSlots/parts; slot < lo || slot >= hi {
				t.Errorf("%d partitions: partition %d tag %s in slot %d; want [%d, %d)", parts, p, tag, slot, lo, hi)
			}
		}
	}
}
