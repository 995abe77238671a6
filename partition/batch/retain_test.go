package batch

import (
	"bytes"
	"fmt"
	"testing"
)

// TestRetainRoundTrip rewrites batches of every codec and timestamp type,
// keeping every other record, and reads the result the way a kgo consumer
// does: the kept records come back with their offsets, keys, values,
// headers and timestamps; the header keeps what Kafka keeps.
func TestRetainRoundTrip(t *testing.T) {
	t.Parallel()
	const (
		baseTs  = 1_700_000_000_000
		lat     = 1_800_000_000_000
		base    = 5_000
		horizon = 1_900_000_000_000
	)
	for _, c := range allCodecs {
		for _, appendTime := range []bool{false, true} {
			for _, stamp := range []bool{false, true} {
				name := fmt.Sprintf("%s/append-time=%t/horizon=%t", c.name, appendTime, stamp)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					recs := testRecords(20, 30)
					recs[4].Value = nil // a tombstone
					recs[6].Value = []byte{}
					b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: recs, baseTs: baseTs,
						idem: true, pid: 9, epoch: 2, seq: 40, attrs: AttrTransactional})
					ts := int64(-1)
					if appendTime {
						ts = lat
					}
					if err := Stamp(b, base, 3, ts); err != nil {
						t.Fatal(err)
					}
					h0, _ := ParseHeader(b)
					hz := int64(NoHorizon)
					if stamp {
						hz = horizon
					}
					var rt Retainer
					defer rt.Close()
					var seen []int32
					out, kept, err := rt.Retain([]byte("prefix"), b, hz, func(r Record) bool {
						seen = append(seen, r.OffsetDelta)
						return r.OffsetDelta%2 == 0 || r.OffsetDelta == 19
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(seen) != 20 {
						t.Fatalf("keep called for %v, want each of 20 records once", seen)
					}
					if kept != 11 || !bytes.HasPrefix(out, []byte("prefix")) {
						t.Fatalf("kept %d (want 11), prefix kept %t", kept, bytes.HasPrefix(out, []byte("prefix")))
					}
					out = out[len("prefix"):]
					h, err := Verify(out)
					if err != nil {
						t.Fatalf("Verify of the rewritten batch: %v", err)
					}
					if h.BaseOffset != base || h.LastOffsetDelta != 19 || h.NumRecords != 11 || h.ProducerID != 9 ||
						h.ProducerEpoch != 2 || h.BaseSequence != 40 || h.PartitionLeaderEpoch != 3 ||
						h.Compression() != c.codec || !h.IsTransactional() || h.TimestampType() != h0.TimestampType() {
						t.Fatalf("header %+v", h)
					}
					if h.HasDeleteHorizon() != stamp {
						t.Fatalf("horizon bit %t, want %t", h.HasDeleteHorizon(), stamp)
					}
					switch {
					case stamp && h.BaseTimestamp != horizon:
						t.Fatalf("base timestamp %d, want the horizon", h.BaseTimestamp)
					case !stamp && !appendTime && h.BaseTimestamp != baseTs:
						t.Fatalf("base timestamp %d, want the first kept record's %d", h.BaseTimestamp, int64(baseTs))
					}
					wantMax := int64(baseTs + 19*3)
					if appendTime {
						wantMax = lat
					}
					if h.MaxTimestamp != wantMax {
						t.Fatalf("max timestamp %d, want %d", h.MaxTimestamp, wantMax)
					}
					got := fetchWithKgo(t, out)
					if len(got) != 11 {
						t.Fatalf("kgo read %d records, want 11", len(got))
					}
					for i, r := range got {
						d := int32(2 * i)
						if i == 10 {
							d = 19
						}
						want := recs[d]
						wantTs := int64(baseTs) + want.TimestampDelta64
						if appendTime {
							wantTs = lat
						}
						if r.Offset != base+int64(d) || !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) ||
							(r.Value == nil) != (want.Value == nil) || r.Timestamp.UnixMilli() != wantTs || len(r.Headers) != len(want.Headers) {
							t.Fatalf("record %d: offset %d key %q value %q (nil %t) ts %d headers %d; want offset %d key %q ts %d",
								i, r.Offset, r.Key, r.Value, r.Value == nil, r.Timestamp.UnixMilli(), len(r.Headers), base+int64(d), want.Key, wantTs)
						}
						for j, hd := range r.Headers {
							if hd.Key != want.Headers[j].Key || !bytes.Equal(hd.Value, want.Headers[j].Value) {
								t.Fatalf("record %d header %d: %+v", i, j, hd)
							}
						}
					}

					// A second pass keeps the horizon as it is and can
					// drop more.
					again, kept2, err := rt.Retain(nil, out, horizon+1, func(r Record) bool { return r.OffsetDelta == 19 })
					if err != nil || kept2 != 1 {
						t.Fatalf("second pass: kept %d, %v", kept2, err)
					}
					h2, err := Verify(again)
					if err != nil {
						t.Fatal(err)
					}
					if stamp && (!h2.HasDeleteHorizon() || h2.BaseTimestamp != horizon) {
						t.Fatalf("second pass moved the horizon: %+v", h2)
					}
					if !stamp && (!h2.HasDeleteHorizon() || h2.BaseTimestamp != horizon+1) {
						t.Fatalf("second pass did not stamp: %+v", h2)
					}
					if h2.LastOffsetDelta != 19 || h2.NumRecords != 1 {
						t.Fatalf("second pass header %+v", h2)
					}
				})
			}
		}
	}
}

// TestRetainUnchangedAndEmpty checks the two cases without a rewrite: all
// kept and nothing to stamp gives the original bytes; none kept appends
// nothing.
func TestRetainUnchangedAndEmpty(t *testing.T) {
	t.Parallel()
	for _, c := range allCodecs {
		b := buildBatch(t, spec{codec: c.codec, xerial: c.xerial, records: testRecords(5, 10), baseTs: 1000})
		var rt Retainer
		out, kept, err := rt.Retain(nil, b, NoHorizon, func(Record) bool { return true })
		if err != nil || kept != 5 || !bytes.Equal(out, b) {
			t.Fatalf("%s: keep all: kept %d, same bytes %t, %v", c.name, kept, bytes.Equal(out, b), err)
		}
		out, kept, err = rt.Retain([]byte("x"), b, 123, func(Record) bool { return false })
		if err != nil || kept != 0 || string(out) != "x" {
			t.Fatalf("%s: keep none: kept %d, out %q, %v", c.name, kept, out, err)
		}
		rt.Close()
	}
}

// TestRetainRefusesDamage checks that a damaged batch is an error, not a
// rewrite of garbage.
func TestRetainRefusesDamage(t *testing.T) {
	t.Parallel()
	b := buildBatch(t, spec{records: testRecords(3, 10)})
	b[len(b)-1] ^= 0xff // CRC no longer matches
	var rt Retainer
	if _, _, err := rt.Retain(nil, b, NoHorizon, func(Record) bool { return true }); err == nil {
		t.Fatal("a batch with a bad CRC was rewritten")
	}
	if _, _, err := rt.Retain(nil, b[:HeaderSize-1], NoHorizon, func(Record) bool { return true }); err == nil {
		t.Fatal("a short batch was rewritten")
	}
}
