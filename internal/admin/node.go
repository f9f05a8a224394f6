package admin

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// The node page: what the process and its machine look like. Values a
// platform does not tell (RSS and open files off Linux, disk space on
// systems without statfs) are null.

// maxDataFiles bounds the walk of the data directory.
const maxDataFiles = 100000

// dirUsage is the size of the data directory and the space left on its
// file system.
type dirUsage struct {
	Path       string `json:"path"`
	Bytes      int64  `json:"bytes"`
	Files      int    `json:"files"`
	Truncated  bool   `json:"truncated,omitempty"` // more than maxDataFiles files: Bytes counts the first
	FreeBytes  *int64 `json:"freeBytes"`
	TotalBytes *int64 `json:"totalBytes"`
}

// dataUsage walks dir (the store: bbolt file, journal segments).
func dataUsage(dir string) (dirUsage, error) {
	u := dirUsage{Path: dir}
	if abs, err := filepath.Abs(dir); err == nil {
		u.Path = abs
	}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (a journal segment)
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if u.Files >= maxDataFiles {
			u.Truncated = true
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		u.Files++
		u.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return u, err
	}
	if free, total, ok := diskSpace(dir); ok {
		u.FreeBytes, u.TotalBytes = &free, &total
	}
	return u, nil
}

type nodeMemory struct {
	// RSSBytes is the resident set size of the process (Linux).
	RSSBytes *int64 `json:"rssBytes"`
	// Go runtime: heap in use, heap reserved, everything the runtime got
	// from the OS, GC cycles.
	HeapAllocBytes uint64 `json:"heapAllocBytes"`
	HeapSysBytes   uint64 `json:"heapSysBytes"`
	SysBytes       uint64 `json:"sysBytes"`
	GCCycles       uint32 `json:"gcCycles"`
}

type nodeJSON struct {
	Version       string     `json:"version"`
	GoVersion     string     `json:"goVersion"`
	OS            string     `json:"os"`
	Arch          string     `json:"arch"`
	CPUs          int        `json:"cpus"`
	PID           int        `json:"pid"`
	Started       string     `json:"started"`
	UptimeSeconds float64    `json:"uptimeSeconds"`
	Goroutines    int        `json:"goroutines"`
	Memory        nodeMemory `json:"memory"`
	// OpenFiles and MaxOpenFiles are the process's file descriptors and
	// their limit (Linux).
	OpenFiles    *int64 `json:"openFiles"`
	MaxOpenFiles *int64 `json:"maxOpenFiles"`
	// Data is the data directory; absent when the broker has none (in
	// memory).
	Data *dirUsage `json:"data,omitempty"`
	// Store is the store's counters, when it keeps them.
	Store *StoreStats `json:"store,omitempty"`
	Time  int64       `json:"time"`
}

// node answers GET /api/node.
func (s *Server) node(w http.ResponseWriter, r *http.Request) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := nodeJSON{Version: s.opts.Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.GOMAXPROCS(0), PID: os.Getpid(), Started: s.started.UTC().Format(time.RFC3339),
		UptimeSeconds: time.Since(s.started).Seconds(), Goroutines: runtime.NumGoroutine(),
		Memory: nodeMemory{HeapAllocBytes: ms.HeapAlloc, HeapSysBytes: ms.HeapSys, SysBytes: ms.Sys, GCCycles: ms.NumGC},
		Time:   time.Now().UnixMilli()}
	if rss, ok := residentBytes(); ok {
		out.Memory.RSSBytes = &rss
	}
	if n, limit, ok := openFiles(); ok {
		out.OpenFiles, out.MaxOpenFiles = &n, &limit
	}
	if s.opts.DataDir != "" {
		u, err := dataUsage(s.opts.DataDir)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Data = &u
	}
	if s.opts.StoreStats != nil {
		st := s.opts.StoreStats()
		out.Store = &st
	}
	writeJSON(w, http.StatusOK, out)
}
