package admin

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kbroker/kbroker/broker"
)

// assets are the page's stylesheet and script, served at /assets/: no
// CDN, no build step.
//
//go:embed assets
var assets embed.FS

//go:embed status.html
var statusHTML string

var statusTmpl = template.Must(template.New("status").Funcs(template.FuncMap{
	"bytes":    humanBytes,
	"count":    humanCount,
	"ms":       humanMs,
	"pct":      pct,
	"since":    since,
	"retBytes": func(n int64) string { return unlimited(n, humanBytes) },
	"retMs":    func(n int64) string { return unlimited(n, humanMs) },
}).Parse(statusHTML))

// page is what the template renders.
type page struct {
	broker.Status
	Ready      bool
	NotReady   string
	Now        time.Time
	Uptime     time.Duration
	Partitions int
	TotalLag   int64
	Charts     []chart
	Files      []fileBar
	// Topics and Groups shadow Status's with sums and cut lists.
	Topics []topicView
	Groups []groupView
}

// topicView is a topic with its partitions summed.
type topicView struct {
	broker.TopicStatus
	Records, Size, BytesIn, BytesOut int64
	// More counts the partitions beyond maxRows, left out of the page.
	More int
}

// groupView is a group whose offsets are cut at maxRows.
type groupView struct {
	broker.GroupStatus
	Lag  int64
	More int
}

// maxRows bounds the partition rows of one topic or group on the page, so
// that a topic with thousands of partitions does not make a page of
// megabytes every two seconds (/status.json has them all).
const maxRows = 200

// fileBar is a commit-log file drawn as a bar: the flushed part, the
// committed part past it, the written part past that (percent of the
// file).
type fileBar struct {
	broker.CommitLogFile
	FlushedPct, CommittedPct, WrotePct float64
	Active                             bool
}

// chart is one throughput chart: an inline SVG path and its numbers.
type chart struct {
	Title   string
	Unit    string
	Now     string
	Peak    string
	Line    template.HTML // SVG points, numbers only
	Area    template.HTML
	Empty   bool
	Minutes int
}

func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	p := page{Now: time.Now()}
	b, err := s.serving()
	if err != nil {
		// Opening or closing: no store to read. The page still renders
		// (and keeps refreshing) so that it comes alive when ready.
		p.NotReady = err.Error()
		s.render(w, &p)
		return
	}
	p.Ready = true
	st := b.Status()
	p.Status = st
	if !st.StartedAt.IsZero() {
		p.Uptime = p.Now.Sub(st.StartedAt).Round(time.Second)
	}
	for _, t := range st.Topics {
		p.Partitions += len(t.Partitions)
		v := topicView{TopicStatus: t}
		for _, ps := range t.Partitions {
			v.Records += ps.HighWatermark - ps.LogStart
			v.Size += ps.Size
			v.BytesIn += ps.BytesIn
			v.BytesOut += ps.BytesOut
		}
		if n := len(v.Partitions); n > maxRows {
			v.Partitions, v.More = v.Partitions[:maxRows], n-maxRows
		}
		p.Topics = append(p.Topics, v)
	}
	for _, g := range st.Groups {
		v := groupView{GroupStatus: g, Lag: g.Lag()}
		p.TotalLag += v.Lag
		if n := len(v.Offsets); n > maxRows {
			v.Offsets, v.More = v.Offsets[:maxRows], n-maxRows
		}
		p.Groups = append(p.Groups, v)
	}
	p.Charts = s.charts()
	last := len(st.CommitLog.Files) - 1
	for i, f := range st.CommitLog.Files {
		p.Files = append(p.Files, fileBar{
			CommitLogFile: f,
			FlushedPct:    visible(pct(f.Flushed, f.Size)),
			CommittedPct:  visible(pct(f.Committed-f.Flushed, f.Size)),
			WrotePct:      visible(pct(f.Wrote-max(f.Committed, f.Flushed), f.Size)),
			Active:        i == last,
		})
	}
	s.render(w, &p)
}

func (s *Server) render(w http.ResponseWriter, p *page) {
	var buf bytes.Buffer
	if err := statusTmpl.Execute(&buf, p); err != nil {
		s.lg.Error("render status page", zap.Error(err))
		http.Error(w, "render status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// Chart geometry, in SVG user units (the SVG scales to its box).
const (
	chartW = 300.0
	chartH = 64.0
)

func (s *Server) charts() []chart {
	r := s.history.rates()
	mins := int(math.Round(float64(historyLen) * sampleEvery.Minutes()))
	return []chart{
		newChart("Bytes in", "/s", r.bytesIn, humanBytesF, mins),
		newChart("Bytes out", "/s", r.bytesOut, humanBytesF, mins),
		newChart("Records in", "/s", r.records, humanCountF, mins),
		newChart("Requests", "/s", r.reqs, humanCountF, mins),
	}
}

// newChart draws values (oldest first) right-aligned on a fixed time axis
// of historyLen samples, scaled to their peak.
func newChart(title, unit string, values []float64, format func(float64) string, minutes int) chart {
	c := chart{Title: title, Unit: unit, Minutes: minutes, Now: format(0), Peak: format(0)}
	if len(values) == 0 {
		c.Empty = true
		return c
	}
	peak := 0.0
	for _, v := range values {
		peak = max(peak, v)
	}
	c.Now, c.Peak = format(values[len(values)-1]), format(peak)
	scale := peak
	if scale == 0 {
		scale = 1
	}
	step := chartW / float64(historyLen)
	x0 := chartW - step*float64(len(values)-1)
	var line strings.Builder
	for i, v := range values {
		if i > 0 {
			line.WriteByte(' ')
		}
		x := x0 + step*float64(i)
		y := chartH - 2 - (chartH-4)*v/scale
		line.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	c.Line = template.HTML(line.String())
	c.Area = template.HTML(fmt.Sprintf("%.1f,%.1f %s %.1f,%.1f", x0, chartH, line.String(), chartW, chartH))
	return c
}

func pct(part, whole int64) float64 {
	if whole <= 0 || part <= 0 {
		return 0
	}
	return math.Min(100, 100*float64(part)/float64(whole))
}

// visible widens a bar segment that is not empty but would round to
// nothing (a few KiB in a 128 MiB file) to a sliver that can be seen.
func visible(p float64) float64 {
	if p > 0 && p < 0.4 {
		return 0.4
	}
	return p
}

func since(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return time.Since(t).Round(time.Second).String()
}

func unlimited(n int64, f func(int64) string) string {
	if n < 0 {
		return "∞"
	}
	return f(n)
}

func humanBytes(n int64) string { return humanBytesF(float64(n)) }

func humanBytesF(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

func humanCount(n int64) string { return humanCountF(float64(n)) }

func humanCountF(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 1, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

func humanMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}
