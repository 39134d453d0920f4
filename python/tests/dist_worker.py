"""One rank of test_distributed.py, started by torchrun (gloo backend, CPU).

Usage: dist_worker.py DATA_ROOT OUT_JSON. Every rank iterates ImageFolderLoader (shard
from torch.distributed) and DALIClassificationIterator (explicit shards) over a few
epochs and all-gathers the labels it saw; rank 0 writes them to OUT_JSON.
"""

import json
import sys

import torch.distributed as dist


def main():
    root, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    import godali
    from godali import fn
    from godali.plugin.pytorch import (DALIClassificationIterator, ImageFolderLoader,
                                       LastBatchPolicy)

    result = {"world": world, "loader": {}, "loader_again": {}, "iterator": {}, "len": {}}
    loader = ImageFolderLoader(root, batch_size=2, image_size=16, num_threads=1)
    assert (loader.shard_id, loader.num_shards) == (rank, world)
    for epoch in (0, 1, 2):
        loader.set_epoch(epoch)
        labels = []
        steps = 0
        for x, y in loader:
            labels.extend(y.tolist())
            steps += 1
        everyone = [None] * world
        dist.all_gather_object(everyone, {"labels": labels, "steps": steps,
                                          "len": len(loader)})
        result["loader"][epoch] = everyone
    # A fresh loader asked for epoch 1 reproduces epoch 1.
    again = ImageFolderLoader(root, batch_size=2, image_size=16, num_threads=1)
    again.set_epoch(1)
    labels = [v for _, y in again for v in y.tolist()]
    everyone = [None] * world
    dist.all_gather_object(everyone, labels)
    result["loader_again"][1] = everyone

    # The DALI way: one pipeline per rank, reader sharded by rank, PARTIAL policy.
    pipe = godali.Pipeline(batch_size=3, num_threads=1, seed=12 + rank)
    with pipe:
        jpegs, labels_node = fn.readers.file(file_root=root, shard_id=rank, num_shards=world,
                                             random_shuffle=True, pad_last_batch=True,
                                             name="Reader")
        images = fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8)
        pipe.set_outputs(images, labels_node)
    it = DALIClassificationIterator(pipe, reader_name="Reader",
                                    last_batch_policy=LastBatchPolicy.PARTIAL,
                                    auto_reset=True)
    for epoch in (0, 1):
        labels = [v for b in it for v in b[0]["label"].reshape(-1).tolist()]
        everyone = [None] * world
        dist.all_gather_object(everyone, {"labels": labels, "len": len(it)})
        result["iterator"][epoch] = everyone

    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
