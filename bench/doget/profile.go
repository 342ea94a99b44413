package doget

import (
	"os"
	"runtime/pprof"
)

// ProfileCPU starts a CPU profile written to path (none when path is
// empty); stop ends it and closes the file.
func ProfileCPU(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
