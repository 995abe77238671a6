package testenv

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// MappingSizes sums the named size fields of /proc/self/smaps ("Rss",
// "FilePmdMapped", ...), in bytes, over the mappings whose first line
// match accepts (its fields: address range, permissions, offset, device,
// inode and, for a file, its path). A missing /proc wraps os.ErrNotExist,
// for callers that skip without it.
func MappingSizes(match func(header []string) bool, names ...string) (map[string]int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sizes := make(map[string]int64, len(names))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		name, isField := strings.CutSuffix(fields[0], ":")
		if !isField {
			in = match(fields)
			continue
		}
		if !in || len(fields) < 2 || !slices.Contains(names, name) {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("smaps %q: %w", sc.Text(), err)
		}
		sizes[name] += kb << 10
	}
	return sizes, sc.Err()
}
