// Package cluster keeps the cluster-wide settings that admin requests
// change at run time, which Kafka keeps as records in its metadata log:
//
//   - finalized feature levels (UpdateFeatures; Kafka's FeatureLevelRecord),
//   - client quotas (AlterClientQuotas; ClientQuotaRecord),
//   - dynamic broker configs, per broker and cluster-wide default
//     (AlterConfigs and IncrementalAlterConfigs on the BROKER resource;
//     ConfigRecord of type BROKER),
//   - group configs (IncrementalAlterConfigs on the GROUP resource, KIP-848;
//     ConfigRecord of type GROUP).
//
// A single node has no metadata log to replicate, so the whole state is one
// small JSON file, <data>/metadata/cluster, replaced atomically (written
// beside, fsynced, renamed, directory fsynced: log.WriteFileAtomic) on
// every change before the change is answered. A crash leaves the old state
// or the new one. The file carries a CRC-32C of its "state" member in
// compact form, so a flipped byte is refused at start-up rather than
// misread:
//
//	{
//	  "version": 1,
//	  "crc32c": 1234567890,
//	  "state": {
//	    "featuresEpoch": 3,
//	    "features": {"group.version": 1},
//	    "quotas": [{"entity": [{"type": "user", "name": "alice"}],
//	                "values": {"producer_byte_rate": 1048576}}],
//	    "brokerConfigs": {"": {"log.retention.ms": "3600000"}, "0": {...}},
//	    "groupConfigs": {"orders": {"consumer.session.timeout.ms": "30000"}}
//	  }
//	}
//
// # Concurrency
//
// Readers load an immutable *State through an atomic pointer and never
// block. Update serialises writers with a mutex, applies the change to a
// deep copy, persists it, and only then publishes it, so no reader ever
// sees a state that is not on disk.
package cluster
