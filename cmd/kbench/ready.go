package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// probeReady waits until a broker at addr accepts a connection and
// answers ApiVersions (v0) and Metadata (v1, all topics, at least one
// broker listed), retrying every 200 µs. It gives up after timeout or
// when exited closes (the broker process ended).
func probeReady(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("the broker exited")
		default:
		}
		if last = askReady(addr, deadline); last == nil {
			return nil
		}
		time.Sleep(200 * time.Microsecond)
	}
	return fmt.Errorf("not ready after %v: %w", timeout, last)
}

// askReady makes one connection and asks ApiVersions and Metadata.
func askReady(addr string, deadline time.Time) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(deadline)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kbench"))

	av := kmsg.NewPtrApiVersionsRequest() // v0: no flexible header
	avResp := kmsg.NewPtrApiVersionsResponse()
	if err := roundTrip(c, f, av, avResp, 1); err != nil {
		return err
	}
	if avResp.ErrorCode != 0 || len(avResp.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions: error %d, %d keys", avResp.ErrorCode, len(avResp.ApiKeys))
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1 // not flexible; nil Topics: all topics
	mdResp := md.ResponseKind().(*kmsg.MetadataResponse)
	if err := roundTrip(c, f, md, mdResp, 2); err != nil {
		return err
	}
	if len(mdResp.Brokers) == 0 {
		return errors.New("Metadata lists no broker")
	}
	return nil
}

// roundTrip sends req (of a version without a flexible header) and reads
// its response into resp.
func roundTrip(c net.Conn, f *kmsg.RequestFormatter, req kmsg.Request, resp kmsg.Response, corr int32) error {
	if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return err
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != corr {
		return errors.New("bad response header")
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body[4:])
}
