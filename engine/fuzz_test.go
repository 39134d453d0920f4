package engine

import (
	"errors"
	"testing"
)

// Fuzz targets for the bytes a user hands the engine: pipeline descriptions
// (godali_pipeline_create) and checkpoints (godali_pipeline_restore). Neither may panic
// or hang; errors are fine, but never an internal one (a bug).

// fuzzRoot is a file_root the description fuzzer never opens: it only parses and
// builds the graph.
const fuzzRoot = "/nonexistent/godali-fuzz"

func FuzzPipelineDescription(f *testing.F) {
	for _, d := range []string{
		resnetJSON(fuzzRoot, 2, 4, 2),
		ckptJSON(fuzzRoot, 1, 1, `, "random_shuffle": true, "initial_fill": 8, "pad_last_batch": true`, ""),
		ckptJSON(fuzzRoot, 1, 1, `, "shard_id": 1, "num_shards": 2, "stick_to_shard": true`, `, "first_epoch": 3`),
		augmentJSON(fuzzRoot, 2),
		`{"batch_size": 2, "ops": [{"op": "random.coin_flip", "name": "c", "outputs": ["x"], "args": {"probability": 0.5}}], "outputs": ["x"]}`,
		`{"batch_size": 2, "ops": [{"op": "readers.file", "outputs": ["b", "l"], "args": {"files": ["a.jpg", "b.png"], "labels": [3, 4]}},
		  {"op": "decoders.image", "inputs": ["b"], "outputs": ["i"], "args": {"output_type": "GRAY"}}], "outputs": ["i", "l"]}`,
		`{"batch_size": 1, "ops": [{"op": "resize", "inputs": ["x"], "outputs": ["x"]}], "outputs": ["x"]}`,
		`{"batch_size": 1, "ops": [], "outputs": []}`,
		`[]`, `{}`, `null`,
	} {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := NewPipeline(data)
		if err != nil {
			if StatusOf(err) == StatusInternal {
				t.Fatalf("internal error for a description: %v", err)
			}
			return
		}
		p.Close()
	})
}

// FuzzCheckpointRestore restores mutated checkpoints into a pipeline of the description
// they were taken from; a restore that succeeds must give batches (or a typed error).
func FuzzCheckpointRestore(f *testing.F) {
	root := writeSmallDataset(f, 2, 5) // 10 samples, batch 4: 3 batches per epoch
	desc := ckptJSON(root, 1, 1, `, "random_shuffle": true, "pad_last_batch": true`, "")
	src, err := NewPipeline([]byte(desc))
	if err != nil {
		f.Fatal(err)
	}
	defer src.Close()
	addCheckpoint := func() {
		c, err := src.Checkpoint()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c)
	}
	addCheckpoint() // before build
	if err := src.Build(); err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 5; i++ { // mid-epoch, the last batch, the end of the epoch, the next epoch
		_, err := src.Next()
		if errors.Is(err, ErrEndOfEpoch) {
			addCheckpoint()
			if err := src.Reset(); err != nil {
				f.Fatal(err)
			}
		} else if err != nil {
			f.Fatal(err)
		}
		addCheckpoint()
	}
	f.Add([]byte(`{"format": "godali-checkpoint"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := NewPipeline([]byte(desc))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.Restore(data); err != nil {
			if StatusOf(err) == StatusInternal {
				t.Fatalf("internal error for a checkpoint: %v", err)
			}
			return
		}
		if err := p.Build(); err != nil {
			t.Fatalf("build after a successful restore: %v", err)
		}
		for i := 0; i < 4; i++ {
			_, err := p.Next()
			if errors.Is(err, ErrEndOfEpoch) {
				if err := p.Reset(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("next %d after a successful restore: %v", i, err)
			}
		}
	})
}
