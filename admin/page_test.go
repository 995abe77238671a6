package admin

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// chromium returns the path of a Chromium (or Chrome) binary. Without one
// the test is skipped, except in CI (CI set, as the other client tests), where .ci/run installs
// Debian's chromium and its absence is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium in PATH; CI must install the chromium package (.ci/run)")
	}
	t.Skip("no chromium in PATH: install Debian's chromium package to run the status page test")
	return ""
}

// headless runs Chromium headless with a fresh profile on url, with the
// extra arguments (--dump-dom, --screenshot=...), and returns its
// standard output. --virtual-time-budget lets the page's script run (and
// refresh the page once) before the DOM is dumped.
func headless(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000",
	}
	args = append(append(args, extra...), url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

func TestStatusPageInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	b, s := startBroker(t, nil)
	w := runWorkload(t, b)
	url := "http://" + s.Addr() + "/"

	dom := headless(t, bin, url, "--dump-dom")
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatalf("parse the dumped DOM: %v", err)
	}
	if find(doc, func(n *html.Node) bool { return attr(n, "id") == "ready" && text(n) == "ready" }) == nil {
		t.Errorf("the page does not say ready:\n%.2000s", dom)
	}
	topic := find(doc, func(n *html.Node) bool { return n.Data == "tbody" && attr(n, "data-topic") == w.topic })
	if topic == nil {
		t.Fatalf("no topic %q in the topics table:\n%.4000s", w.topic, dom)
	}
	hw := find(topic, func(n *html.Node) bool { return hasClass(n, "hw") })
	if hw == nil || text(hw) != "25" {
		t.Errorf("topic %s partition 0 high watermark: got %q, want 25", w.topic, textOf(hw))
	}
	group := find(doc, func(n *html.Node) bool { return n.Data == "tbody" && attr(n, "data-group") == w.group })
	if group == nil {
		t.Fatalf("no group %q in the groups table:\n%.4000s", w.group, dom)
	}
	lag := find(group, func(n *html.Node) bool { return hasClass(n, "lag") })
	if want := "5"; lag == nil || attr(lag, "data-lag") != want || text(lag) != want {
		t.Errorf("group %s lag: got %q, want %s", w.group, textOf(lag), want)
	}
	state := find(group, func(n *html.Node) bool { return hasClass(n, "state") })
	if state == nil || text(state) != "Stable" {
		t.Errorf("group %s state: got %q, want Stable", w.group, textOf(state))
	}
	if find(doc, func(n *html.Node) bool { return attr(n, "data-file") != "" }) == nil {
		t.Errorf("no commit-log file bars on the page")
	}
	// The script ran and refreshed the page from the broker at least once.
	root := find(doc, func(n *html.Node) bool { return n.Data == "html" })
	if root == nil || attr(root, "data-refreshed") == "" {
		t.Errorf("the page did not refresh itself within the virtual time budget")
	}

	// A screenshot for people, kept with the test's artifacts (go test
	// -artifacts keeps them; otherwise the directory is temporary).
	shot := filepath.Join(t.ArtifactDir(), "status.png")
	headless(t, bin, url, "--window-size=1280,1600", "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10<<10 {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot of the status page: %s (%d KiB)", shot, len(png)>>10)
}

// find returns the first node under n (n included) that match accepts.
func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := find(c, match); m != nil {
			return m
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return n.Type == html.ElementNode && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
}

// text is the trimmed text content of n.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

func textOf(n *html.Node) string {
	if n == nil {
		return "<missing>"
	}
	return text(n)
}
