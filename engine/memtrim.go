package engine

import "runtime/debug"

// TrimBytes bounds what a worker keeps between samples: an intermediate buffer or a
// decoder scratch larger than this, grown for one large image, is dropped after that
// sample instead of being held for the pipeline's life (sizes below it are reused, so
// steady state does not allocate).
const TrimBytes = 64 << 20

// Trimmer is implemented by worker states that can give back memory above a bound.
type Trimmer interface{ Trim(limit int) }

// trim drops the worker's buffers above TrimBytes after a sample.
func (w *worker) trim() {
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
