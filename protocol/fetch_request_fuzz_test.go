package protocol

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseFetch compares ParseFetchBody with kmsg's decoder (through
// ParseBody) on any frame that claims to be a Fetch request: both fail or
// both give the same request, whether decoded into a fresh request or
// into one that held a different, larger request before (the reuse a
// connection makes), and ParseFetchBody never panics.
//
// Seeds: every Fetch version in its default form and with topics,
// forgotten topics, a rack, a cluster id, a replica state and unknown
// tags, and kgo's captured frames from testdata/fuzz/FuzzParseRequest.
func FuzzParseFetch(f *testing.F) {
	for _, frame := range fetchSeeds(f) {
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkParseFetch(t, frame)
	})
}

// fetchSeeds are Fetch frames (size prefix removed) of every version.
func fetchSeeds(tb testing.TB) [][]byte {
	var frames [][]byte
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	for v := int16(4); v <= kmsg.NewPtrFetchRequest().MaxVersion(); v++ {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		frames = append(frames, rf.AppendRequest(nil, req, 1)[4:], multiFetchFrame(v, 2, 3))
	}
	return append(frames, readSeedCorpus(tb)...)
}

// multiFetchFrame is a Fetch request of topics topics of parts partitions
// each, two forgotten topics, a rack, and from v12 a cluster id, a
// replica state, a replica directory id and unknown tags.
func multiFetchFrame(v int16, topics, parts int) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, 500, 1, 50<<20, 1
	req.SessionID, req.SessionEpoch, req.Rack = 77, 3, "rack-a"
	if v >= 12 {
		id := "cluster"
		req.ClusterID = &id
		req.ReplicaState.ID, req.ReplicaState.Epoch = -1, 9
		req.UnknownTags.Set(7, []byte("x"))
	}
	for i := range topics {
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = fmt.Sprintf("topic-%d", i), [16]byte{byte(i + 1), 2, 3}
		for p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = int32(p), int64(100*p), 1<<20, 4
			rp.LastFetchedEpoch, rp.LogStartOffset = 2, 5
			if v >= 12 && p == 1 {
				rp.ReplicaDirectoryID, rp.HighWatermark = [16]byte{9}, 1234
				rp.UnknownTags.Set(5, []byte("y"))
			}
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	for i := range 2 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = fmt.Sprintf("gone-%d", i), [16]byte{byte(i + 7)}, []int32{int32(i), 4}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("multi")).AppendRequest(nil, req, 7)[4:]
}

// checkParseFetch is the fuzz property for one frame.
func checkParseFetch(t *testing.T, frame []byte) {
	h, rest, err := ParseHeader(frame)
	if err != nil || h.Key != 1 || h.Version < 4 || h.Version > kmsg.NewPtrFetchRequest().MaxVersion() {
		return // the broker refuses it before decoding the body
	}
	want, wantErr := ParseBody(h, rest)

	fresh := kmsg.NewPtrFetchRequest()
	gotErr := ParseFetchBody(h, rest, fresh)
	used := kmsg.NewPtrFetchRequest()
	if err := ParseFetchBody(Header{Key: 1, Version: h.Version}, bodyOf(t, multiFetchFrame(h.Version, 3, 4)), used); err != nil {
		t.Fatalf("v%d: the reuse seed does not parse: %v", h.Version, err)
	}
	ClearFetch(used)
	usedErr := ParseFetchBody(h, rest, used)

	if (wantErr != nil) != (gotErr != nil) || (wantErr != nil) != (usedErr != nil) {
		t.Fatalf("v%d: kmsg error %v, ParseFetchBody %v, into a used request %v", h.Version, wantErr, gotErr, usedErr)
	}
	if gotErr != nil {
		if !errors.Is(gotErr, ErrMalformed) || !errors.Is(usedErr, ErrMalformed) {
			t.Fatalf("errors %v, %v do not wrap ErrMalformed", gotErr, usedErr)
		}
		return
	}
	w := normalFetch(want.(*kmsg.FetchRequest))
	if g := normalFetch(fresh); !reflect.DeepEqual(w, g) {
		t.Fatalf("v%d, fresh request:\n got %+v\nwant %+v", h.Version, g, w)
	}
	if g := normalFetch(used); !reflect.DeepEqual(w, g) {
		t.Fatalf("v%d, reused request:\n got %+v\nwant %+v", h.Version, g, w)
	}
}

// fetchView is a decoded Fetch request in comparable form: empty arrays
// as nil, tags as maps.
type fetchView struct {
	req       kmsg.FetchRequest
	clusterID string
	hasID     bool
	tags      []map[uint32]string
}

// normalFetch is r's fetchView; r is not changed.
func normalFetch(r *kmsg.FetchRequest) fetchView {
	var v fetchView
	collect := func(t kmsg.Tags) {
		m := map[uint32]string{}
		t.Each(func(k uint32, b []byte) { m[k] = string(b) })
		v.tags = append(v.tags, m)
	}
	c := *r
	if c.ClusterID != nil {
		v.clusterID, v.hasID = *c.ClusterID, true
	}
	c.ClusterID = nil
	collect(c.UnknownTags)
	collect(c.ReplicaState.UnknownTags)
	c.UnknownTags, c.ReplicaState.UnknownTags = kmsg.Tags{}, kmsg.Tags{}
	var topics []kmsg.FetchRequestTopic
	for _, t := range c.Topics {
		collect(t.UnknownTags)
		t.UnknownTags = kmsg.Tags{}
		var parts []kmsg.FetchRequestTopicPartition
		for _, p := range t.Partitions {
			collect(p.UnknownTags)
			p.UnknownTags = kmsg.Tags{}
			parts = append(parts, p)
		}
		t.Partitions = parts
		topics = append(topics, t)
	}
	c.Topics = topics
	var forgotten []kmsg.FetchRequestForgottenTopic
	for _, t := range c.ForgottenTopics {
		collect(t.UnknownTags)
		t.UnknownTags = kmsg.Tags{}
		if len(t.Partitions) == 0 {
			t.Partitions = nil
		}
		forgotten = append(forgotten, t)
	}
	c.ForgottenTopics = forgotten
	v.req = c
	return v
}

// TestParseFetchReusesArrays: decoding a connection's next fetch into its
// kept request allocates nothing, by topic id (v13+) and by name.
func TestParseFetchReusesArrays(t *testing.T) {
	for _, v := range []int16{4, 11, 12, 13, 17} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			h, rest, err := ParseHeader(multiFetchFrame(v, 2, 3))
			if err != nil {
				t.Fatal(err)
			}
			if v >= 12 {
				// Unknown tags are the one part kept by allocating, as
				// kmsg does; clients send none.
				req := kmsg.NewPtrFetchRequest()
				req.SetVersion(v)
				req.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}}}
				id := "cluster"
				req.ClusterID, req.Rack = &id, "rack"
				h, rest, err = ParseHeader(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:])
				if err != nil {
					t.Fatal(err)
				}
			}
			req := kmsg.NewPtrFetchRequest()
			if err := ParseFetchBody(h, rest, req); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				ClearFetch(req)
				if err := ParseFetchBody(h, rest, req); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("got %v allocations per decode, want 0", allocs)
			}
			if len(req.Topics) == 0 || len(req.Topics[0].Partitions) == 0 {
				t.Fatalf("decoded %+v", req)
			}
		})
	}
}

// TestParseFetchSeeds runs the fuzz property on the seeds alone.
func TestParseFetchSeeds(t *testing.T) {
	for _, frame := range fetchSeeds(t) {
		checkParseFetch(t, frame)
	}
}
