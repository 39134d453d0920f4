package engine

import "runtime/debug"

// TrimBytes bounds what a worker keeps between samples: an intermediate buffer or a
// decoder scratch larger than this, grown for one large image, is dropped after that
// sample instead of being held for the pipeline's life (sizes below it are reused, so
// steady state does not allocate).
const TrimBytes = 64 << 20

// Trimmer is implemented by worker states that can give back memory above a bound.
type Trimmer interface{ Trim(limit int) }

// trim drops the worker's buffers above TrimBytes after a sample: Go buffers to the
// garbage collector, pooled ones (bigBuffer and up) unmapped at once.
func (w *worker) trim() {
	drained := false
	for id, ls := range w.big {
		for k, l := range ls {
			if l == nil || len(l.mem) <= TrimBytes {
				continue
			}
			if !drained {
				w.gpu.drain() // GPU work queued from the buffer is over
				drained = true
			}
			ls[k] = nil
			if ws := w.ws[id]; ws != nil && k < len(ws.Out) {
				ws.Out[k].Data = nil
			}
			l.ReleaseUnmap()
		}
	}
	for id, outs := range w.bufs {
		for k, b := range outs {
			if cap(b) > TrimBytes {
				outs[k] = nil
				if ws := w.ws[id]; ws != nil && k < len(ws.Out) {
					ws.Out[k].Data = nil // the tensor views the buffer too
				}
			}
		}
	}
	for _, s := range w.states {
		if t, ok := s.(Trimmer); ok {
			t.Trim(TrimBytes)
		}
	}
}

// releaseMemory returns the freed Go heap of a closed pipeline to the system, so that a
// process that ran one (its workers' buffers, decoders' scratch) does not keep the high
// water mark of its largest image.
func releaseMemory() { debug.FreeOSMemory() }
