package buildinfo

// The build's version, commit and date, set at link time, e.g. by
// scripts/dist.sh and the Dockerfile:
//
//	go build -ldflags "-X github.com/sluicemq/sluice/internal/buildinfo.version=v0.1.0 \
//	  -X github.com/sluicemq/sluice/internal/buildinfo.commit=$(git rev-parse HEAD) \
//	  -X github.com/sluicemq/sluice/internal/buildinfo.date=2026-01-01T00:00:00Z" ./cmd/sluice
//
// They are the package's only variables and nothing assigns them at run
// time; Get is the one function that reads them.
var (
	version string
	commit  string
	date    string
)
