package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// sampleResponses are responses with some content, for header tests.
func sampleResponses() []kmsg.Response {
	av := func(v int16) kmsg.Response {
		r := kmsg.NewPtrApiVersionsResponse()
		r.Version = v
		for _, key := range []int16{0, 3, 18} {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MaxVersion = key, 9
			r.ApiKeys = append(r.ApiKeys, k)
		}
		return r
	}
	md := func(v int16) kmsg.Response {
		r := kmsg.NewPtrMetadataResponse()
		r.Version = v
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 0, "127.0.0.1", 9092
		r.Brokers = append(r.Brokers, b)
		r.ClusterID = kmsg.StringPtr("cluster")
		t := kmsg.NewMetadataResponseTopic()
		t.Topic, t.TopicID = kmsg.StringPtr("orders"), [16]byte{1, 2, 3}
		for i := range int32(3) {
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Partition, p.Replicas, p.ISR = i, []int32{0}, []int32{0}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
		return r
	}
	pr := func(v int16) kmsg.Response {
		r := kmsg.NewPtrProduceResponse()
		r.Version = v
		t := kmsg.NewProduceResponseTopic()
		t.Topic = "orders"
		p := kmsg.NewProduceResponseTopicPartition()
		p.BaseOffset = 42
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	return []kmsg.Response{av(0), av(3), av(4), md(1), md(8), md(9), md(12), pr(8), pr(9)}
}

// TestAppendResponseHeader checks the frame layout against kmsg: size,
// correlation id, then for flexible versions an empty tagged-field
// section, except for ApiVersions, whose response header is v0 at every
// version (KIP-511: a client that does not know the broker's versions must
// be able to read it); then exactly the body kmsg encodes and decodes.
func TestAppendResponseHeader(t *testing.T) {
	for _, resp := range sampleResponses() {
		name := fmt.Sprintf("%s/v%d", kmsg.NameForKey(resp.Key()), resp.GetVersion())
		t.Run(name, func(t *testing.T) {
			prefix := []byte("earlier frames")
			frame := AppendResponse(bytes.Clone(prefix), 0x01020304, resp)
			if !bytes.HasPrefix(frame, prefix) {
				t.Fatal("AppendResponse changed what was already in dst")
			}
			frame = frame[len(prefix):]
			if size := binary.BigEndian.Uint32(frame); int(size) != len(frame)-4 {
				t.Fatalf("size prefix %d, frame has %d bytes after it", size, len(frame)-4)
			}
			if corr := binary.BigEndian.Uint32(frame[4:]); corr != 0x01020304 {
				t.Fatalf("correlation id %#x, want 0x01020304", corr)
			}
			body := frame[8:]
			wantTags := resp.IsFlexible() && resp.Key() != 18
			if wantTags {
				if body[0] != 0 {
					t.Fatalf("flexible response header: tagged-field count %d, want 0", body[0])
				}
				body = body[1:]
			}
			if want := resp.AppendTo(nil); !bytes.Equal(body, want) {
				t.Fatalf("body after the header (tag byte expected: %v):\n got %x\nwant %x", wantTags, body, want)
			}
			got := kmsg.ResponseForKey(resp.Key())
			got.SetVersion(resp.GetVersion())
			if err := got.ReadFrom(body); err != nil {
				t.Fatalf("kmsg cannot decode the body: %v", err)
			}
			if again := got.AppendTo(nil); !bytes.Equal(again, body) {
				t.Fatalf("decoded body re-encodes differently:\n got %x\nwant %x", again, body)
			}
		})
	}
}

// TestKgoReadsAppendResponse: a kgo client, limited to the versions of
// several Kafka releases, talks to the fake broker (whose every answer is
// framed by AppendResponse): if a response header were wrong by one byte,
// kgo could not decode the ApiVersions handshake, the metadata or the
// created topic.
func TestKgoReadsAppendResponse(t *testing.T) {
	tests := []struct {
		release         string
		versions        *kversion.Versions
		apiVersions, md int16
	}{
		{"0.10.0", kversion.V0_10_0(), 0, 1},
		{"2.3.0", kversion.V2_3_0(), 2, 8},
		{"3.6.0", kversion.V3_6_0(), 3, 12},
		{"newest", nil, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			fb := newFakeBroker(t)
			opts := []kgo.Opt{kgo.SeedBrokers(fb.addr()), kgo.RetryTimeout(5 * time.Second), kgo.RequestRetries(2)}
			if tt.versions != nil {
				opts = append(opts, kgo.MaxVersions(tt.versions))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			// CreateTopics came with 0.10.1; before, Metadata auto-creates.
			canCreate := tt.versions == nil || tt.versions.HasKey(19)
			if canCreate {
				if _, err := adm.CreateTopics(ctx, 3, 1, nil, "orders"); err != nil {
					t.Fatalf("CreateTopics: %v", err)
				}
			}
			md, err := adm.Metadata(ctx, "orders")
			if err != nil {
				t.Fatalf("Metadata: %v", err)
			}
			if len(md.Brokers) != 1 || md.Brokers[0].Port != fb.port || md.Brokers[0].Host != fb.host {
				t.Fatalf("brokers %+v, want one at %s", md.Brokers, fb.addr())
			}
			td, ok := md.Topics["orders"]
			if !ok || td.Err != nil {
				t.Fatalf("topic orders: %+v", td)
			}
			if canCreate && len(td.Partitions) != 3 {
				t.Fatalf("topic orders has %d partitions, want 3", len(td.Partitions))
			}

			// The requests went out at the versions the release caps.
			sent := map[int16]int16{}
			for _, frame := range fb.received() {
				h, _, err := ParseHeader(frame)
				if err != nil {
					t.Fatal(err)
				}
				sent[h.Key] = max(sent[h.Key], h.Version)
			}
			if tt.apiVersions >= 0 && sent[18] != tt.apiVersions {
				t.Errorf("ApiVersions sent at v%d, want v%d", sent[18], tt.apiVersions)
			}
			if tt.md >= 0 && sent[3] != tt.md {
				t.Errorf("Metadata sent at v%d, want v%d", sent[3], tt.md)
			}
		})
	}
}
