package broker

// adminAPIs are the metadata and administration APIs: Metadata, topic
// and config administration, DescribeCluster, DescribeLogDirs.
func adminAPIs() []api {
	return nil
}
