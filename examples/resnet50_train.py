"""ResNet-50 training on ImageNet-style folders, fed by godali (DALI's PyTorch example,
with godali's imports).

    python examples/resnet50_train.py --data DIR [--arch resnet50] [--epochs 90]
        [--batch-size 256] [--workers 4] [--steps N] [--device cpu|cuda]

DIR holds train/ and val/ ImageFolder trees (or is one tree, used for both). Distributed:
    torchrun --nproc_per_node=K examples/resnet50_train.py --data DIR
(one process per GPU with NCCL; on CPU, gloo.)

Quick CPU check: --arch resnet18 --steps 5 --batch-size 8 --image-size 64.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from godali import fn, pipeline_def, types  # noqa: E402  (was: from nvidia.dali import ...)
from godali.plugin.pytorch import (DALIClassificationIterator,  # noqa: E402
                                   LastBatchPolicy)


@pipeline_def
def create_pipeline(data_dir, crop, size, shard_id, num_shards, decode_on_gpu, is_training):
    jpegs, labels = fn.readers.file(file_root=data_dir, shard_id=shard_id,
                                    num_shards=num_shards, random_shuffle=is_training,
                                    pad_last_batch=True, name="Reader")
    decoder_device = "mixed" if decode_on_gpu else "cpu"
    # Preallocation hints matter only for the GPU decoder (ImageNet's largest image).
    width_hint = 5980 if decode_on_gpu else 0
    height_hint = 6430 if decode_on_gpu else 0
    if is_training:
        images = fn.decoders.image_random_crop(
            jpegs, device=decoder_device, output_type=types.RGB,
            preallocate_width_hint=width_hint, preallocate_height_hint=height_hint,
            random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0], num_attempts=100)
        images = fn.resize(images, resize_x=crop, resize_y=crop,
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(jpegs, device=decoder_device, output_type=types.RGB)
        images = fn.resize(images, size=size, mode="not_smaller",
                           interp_type=types.INTERP_TRIANGULAR)
        mirror = False
    images = fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, output_layout="CHW", crop=(crop, crop),
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=mirror)
    return images, labels


def parse_args(argv):
    ap = argparse.ArgumentParser(description="ResNet training with godali")
    ap.add_argument("--data", required=True, help="folder with train/ and val/ (or one "
                    "ImageFolder tree)")
    ap.add_argument("--arch", default="resnet50", help="a torchvision.models name")
    ap.add_argument("--epochs", type=int, default=90)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many training "
                    "steps in total (0: run every epoch)")
    ap.add_argument("--batch-size", type=int, default=256, help="per process")
    ap.add_argument("--workers", type=int, default=4, help="godali CPU threads")
    ap.add_argument("--lr", type=float, default=0.1, help="for 256 images per step")
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--cpu-decode", action="store_true", help="decode on the CPU even "
                    "with a GPU (DALI's --dali_cpu)")
    ap.add_argument("--print-freq", type=int, default=10)
    ap.add_argument("--seed", type=int, default=12)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    on_gpu = args.device == "cuda"
    if world > 1:
        dist.init_process_group("nccl" if on_gpu else "gloo")
    if on_gpu:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")

    train_dir = os.path.join(args.data, "train")
    val_dir = os.path.join(args.data, "val")
    if not os.path.isdir(train_dir):
        train_dir = val_dir = args.data

    from godali import _lib
    decode_on_gpu = on_gpu and not args.cpu_decode and _lib.get().flavour == "cuda"
    crop, size = args.image_size, int(args.image_size * 256 / 224)
    common = dict(batch_size=args.batch_size, num_threads=args.workers,
                  device_id=local_rank if decode_on_gpu else None, crop=crop, size=size,
                  shard_id=rank, num_shards=world, decode_on_gpu=decode_on_gpu)
    train_pipe = create_pipeline(data_dir=train_dir, is_training=True,
                                 seed=args.seed + local_rank, **common)
    val_pipe = create_pipeline(data_dir=val_dir, is_training=False, seed=args.seed,
                               **common)
    train_loader = DALIClassificationIterator(train_pipe, reader_name="Reader",
                                              last_batch_policy=LastBatchPolicy.PARTIAL,
                                              auto_reset=True)
    val_loader = DALIClassificationIterator(val_pipe, reader_name="Reader",
                                            last_batch_policy=LastBatchPolicy.PARTIAL,
                                            auto_reset=True)

    num_classes = len([d for d in os.scandir(train_dir) if d.is_dir()])
    model = torchvision.models.__dict__[args.arch](num_classes=num_classes).to(device)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if on_gpu else None)
    lr = args.lr * args.batch_size * world / 256
    optimizer = torch.optim.SGD(model.parameters(), lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    criterion = nn.CrossEntropyLoss().to(device)

    steps = 0
    for epoch in range(args.epochs):
        model.train()
        start = time.perf_counter()
        seen = 0
        for i, data in enumerate(train_loader):
            images = data[0]["data"].to(device, non_blocking=True)
            target = data[0]["label"].squeeze(-1).long().to(device, non_blocking=True)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen += images.shape[0]
            steps += 1
            if rank == 0 and (i % args.print_freq == 0 or steps == args.steps):
                rate = seen * world / (time.perf_counter() - start)
                print("epoch %d step %d/%d loss %.4f  %.1f img/s"
                      % (epoch, i + 1, len(train_loader), loss.item(), rate), flush=True)
            if args.steps and steps >= args.steps:
                break
        if args.steps and steps >= args.steps:
            if rank == 0:
                print("stopped after %d steps" % steps)
            break
        top1 = validate(model, val_loader, device, world)
        if rank == 0:
            print("epoch %d: val top-1 %.2f%%" % (epoch, top1))
    if world > 1:
        dist.destroy_process_group()
    return 0


def validate(model, loader, device, world):
    model.eval()
    correct = torch.zeros(2, device=device)
    with torch.no_grad():
        for data in loader:
            images = data[0]["data"].to(device, non_blocking=True)
            target = data[0]["label"].squeeze(-1).long().to(device, non_blocking=True)
            pred = model(images).argmax(1)
            correct[0] += (pred == target).sum()
            correct[1] += target.numel()
    if world > 1:
        dist.all_reduce(correct)
    return 100.0 * correct[0].item() / max(1.0, correct[1].item())


if __name__ == "__main__":
    sys.exit(main())
