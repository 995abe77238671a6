package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// seedTopic is one topic of kbroker.seed.topics.
type seedTopic struct {
	name       string
	partitions int32
}

// parseSeedTopics parses kbroker.seed.topics: comma-separated
// name[:partitions]; a topic without a count gets defaultPartitions.
func parseSeedTopics(s string, defaultPartitions int32) ([]seedTopic, error) {
	var out []seedTopic
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, count, hasCount := strings.Cut(item, ":")
		st := seedTopic{name: name, partitions: defaultPartitions}
		if hasCount {
			n, err := strconv.ParseInt(count, 10, 32)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("kbroker.seed.topics: %q: partitions must be a positive number", item)
			}
			st.partitions = int32(n)
		}
		if name == "" {
			return nil, fmt.Errorf("kbroker.seed.topics: %q has no topic name", item)
		}
		out = append(out, st)
	}
	return out, nil
}

// seedTopics creates the topics of kbroker.seed.topics that do not
// exist yet.
func (b *Broker) seedTopics() error {
	seeds, err := parseSeedTopics(b.cfg.SeedTopics, b.cfg.DefaultPartitions)
	if err != nil {
		return err
	}
	for _, s := range seeds {
		if _, err := b.topics.Create(s.name, s.partitions, nil, false); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("broker: seed topic %s: %w", s.name, err)
		}
	}
	return nil
}
