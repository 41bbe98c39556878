package harvest

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCarrierPool(t *testing.T) {
	t.Parallel()
	waitIdle := func(t *testing.T, p *carrierPool, n int32) {
		t.Helper()
		require.Eventually(t, func() bool { return p.idle.Load() >= n }, 10*time.Second, time.Millisecond)
	}

	t.Run("ACarrierThatReturnsTakesTheNextCoroutine", func(t *testing.T) {
		t.Parallel()
		p := newCarrierPool(4)
		done := make(chan struct{})
		p.run(func() { close(done) })
		<-done
		waitIdle(t, p, 1)
		ran := make(chan int32)
		p.run(func() { ran <- p.idle.Load() })
		require.EqualValues(t, 0, <-ran, "the idle carrier took it")
	})

	t.Run("GoexitEndsTheCarrierAfterItsDefers", func(t *testing.T) {
		t.Parallel()
		p := newCarrierPool(4)
		deferred := make(chan struct{})
		p.run(func() {
			defer close(deferred)
			runtime.Goexit()
		})
		<-deferred
		require.EqualValues(t, 0, p.idle.Load(), "a carrier left by Goexit is not idle")
	})

	t.Run("IdleCarriersAreBounded", func(t *testing.T) {
		t.Parallel()
		const maxIdle, n = 3, 10
		p := newCarrierPool(maxIdle)
		release := make(chan struct{})
		started := make(chan struct{}, n)
		for range n {
			p.run(func() { started <- struct{}{}; <-release })
		}
		for range n {
			<-started
		}
		close(release)
		waitIdle(t, p, maxIdle)
		require.EqualValues(t, maxIdle, p.idle.Load(), "the carriers beyond the bound ended")
	})
}
