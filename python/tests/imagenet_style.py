"""An ImageNet-style training script, written the way PyTorch's own ImageNet example
is (full names torch.utils.data.DataLoader and
torch.utils.data.distributed.DistributedSampler, torchvision ImageFolder with
transforms.Compose, a Subset of the val set for what the ranks' samplers leave over),
with godali switched on by the two lines at its top. test_torch_install.py runs it in
one process and as two ranks (torchrun, gloo on loopback).

Usage: imagenet_style.py DATA OUT_JSON [--batch-size N] [--workers N]
DATA holds train/ and val/ ImageFolder trees. Every rank writes OUT_JSON.rank<r>.
"""

import godali.torch
godali.torch.install()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.utils.data  # noqa: E402
import torch.utils.data.distributed  # noqa: E402
import torchvision.datasets as datasets  # noqa: E402
import torchvision.transforms as transforms  # noqa: E402
from torch.utils.data import Subset  # noqa: E402


def tiny_model(classes):
    # Small enough for a CPU test; the data path is what is being exercised.
    return nn.Sequential(nn.Conv2d(3, 8, 7, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, classes))


def run_epoch(loader, model, loss_fn, optimizer=None):
    labels, steps = [], 0
    model.train(optimizer is not None)
    with torch.set_grad_enabled(optimizer is not None):
        for images, target in loader:
            assert images.shape[1:] == (3, 224, 224) and images.dtype == torch.float32
            loss = loss_fn(model(images), target)
            if optimizer is not None:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            labels.extend(target.tolist())
            steps += 1
    return labels, steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    world = dist.get_world_size() if distributed else 1
    rank = dist.get_rank() if distributed else 0

    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(
        os.path.join(args.data, "train"),
        transforms.Compose([transforms.RandomResizedCrop(224),
                            transforms.RandomHorizontalFlip(),
                            transforms.ToTensor(), normalize]))
    val_dataset = datasets.ImageFolder(
        os.path.join(args.data, "val"),
        transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224),
                            transforms.ToTensor(), normalize]))
    if distributed:
        train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
        val_sampler = torch.utils.data.distributed.DistributedSampler(
            val_dataset, shuffle=False, drop_last=True)
    else:
        train_sampler = val_sampler = None
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False,
        num_workers=args.workers, pin_memory=True, sampler=val_sampler)

    model = tiny_model(len(train_dataset.classes))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9)
    result = {"rank": rank, "world": world, "epochs": []}
    for epoch in range(2):
        if distributed:
            train_sampler.set_epoch(epoch)
        train_labels, train_steps = run_epoch(train_loader, model, loss_fn, optimizer)
        val_labels, val_steps = run_epoch(val_loader, model, loss_fn)
        aux_labels = []
        if distributed and len(val_loader.sampler) * world < len(val_loader.dataset):
            aux = Subset(val_loader.dataset,
                         range(len(val_loader.sampler) * world, len(val_loader.dataset)))
            aux_loader = torch.utils.data.DataLoader(
                aux, batch_size=args.batch_size, shuffle=False,
                num_workers=args.workers, pin_memory=True)
            aux_labels, _ = run_epoch(aux_loader, model, loss_fn)
            result["aux_type"] = type(aux_loader).__module__ + "." + type(aux_loader).__name__
        result["epochs"].append({"train": train_labels, "train_steps": train_steps,
                                 "train_len": len(train_loader), "val": val_labels,
                                 "val_steps": val_steps, "val_len": len(val_loader),
                                 "aux": aux_labels})
    for name, ld in (("train_type", train_loader), ("val_type", val_loader)):
        result[name] = type(ld).__module__ + "." + type(ld).__name__
    result["isinstance"] = isinstance(train_loader, torch.utils.data.DataLoader)
    with open("%s.rank%d" % (args.out, rank), "w") as f:
        json.dump(result, f)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
