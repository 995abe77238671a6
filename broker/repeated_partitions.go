package broker

// mergeRepeated folds the entries of a request's topic list that name one
// topic (key) more than once into one, where the topic is first named,
// and within it the partitions named more than once into one, where first
// named, holding the last naming: Kafka keys Produce, DeleteRecords and
// ListOffsets requests by partition, so the last naming wins and each
// partition is answered once, grouped by topic. It allocates: for
// malformed requests only.
func mergeRepeated[T, P any, K comparable](topics []T, key func(*T) K, parts func(*T) *[]P, partition func(*P) int32) []T {
	type partitionKey struct {
		topic     int // in the merged topics
		partition int32
	}
	out := make([]T, 0, len(topics))
	topicAt := make(map[K]int, len(topics))
	partitionAt := make(map[partitionKey]int)
	for ti := range topics {
		rt := &topics[ti]
		i, ok := topicAt[key(rt)]
		if !ok {
			i = len(out)
			topicAt[key(rt)] = i
			merged := *rt
			*parts(&merged) = nil // not appended to in the request's array
			out = append(out, merged)
		}
		dst := parts(&out[i])
		for _, rp := range *parts(rt) {
			k := partitionKey{i, partition(&rp)}
			if j, ok := partitionAt[k]; ok {
				(*dst)[j] = rp
				continue
			}
			partitionAt[k] = len(*dst)
			*dst = append(*dst, rp)
		}
	}
	return out
}
