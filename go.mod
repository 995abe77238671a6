module github.com/kbroker/kbroker

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/twmb/franz-go/pkg/kadm v1.20.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
)
