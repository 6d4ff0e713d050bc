package operation

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// syscallWorkers is how many goroutines make per-file system calls at once
// (the stats of the files an apply keeps): on a fleet they are tens of
// thousands, each one short, and a system call that blocks (a cold inode
// cache, a slow disk) holds its goroutine, not the others.
var syscallWorkers = max(8, runtime.GOMAXPROCS(0))

// eachIndex calls f(i) for each i in [0, n), on up to workers goroutines,
// the indexes taken in increasing order. After a call fails, no further call
// begins; it returns the error of the lowest index that failed, which is the
// error a loop over the indexes in order returns: every index below a failed
// one was taken before it, and its call ends.
func eachIndex(n, workers int, f func(i int) error) error {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			if err := f(i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	first, firstAt := error(nil), n
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					failed.Store(true)
					mu.Lock()
					if i < firstAt {
						first, firstAt = err, i
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}
