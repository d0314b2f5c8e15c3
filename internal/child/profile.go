package child

import (
	"os"
	"runtime/pprof"
)

// StartCPUProfile profiles the process's CPU from now on into the file at
// path; stop ends the profile and closes the file.
func StartCPUProfile(path string) (stop func(), err error) {
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
