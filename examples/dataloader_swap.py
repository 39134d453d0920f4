"""Swap torch's DataLoader(ImageFolder) for godali's ImageFolderLoader: one line.

    python examples/dataloader_swap.py --data DIR [--steps 5] [--loader godali|torch]

DIR is an ImageFolder tree (one subfolder per class). Both loaders yield the same thing:
float32 images [N, 3, 224, 224] normalised with the ImageNet mean/std, int64 labels [N].
"""

import argparse
import os
import sys
import time

import torch
import torchvision
from torchvision import transforms

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from godali import ImageFolderLoader  # noqa: E402


def torch_loader(root, batch_size, image_size, workers):
    tf = transforms.Compose([
        transforms.RandomResizedCrop(image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    return torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(root, tf),
                                       batch_size=batch_size, shuffle=True,
                                       num_workers=workers, drop_last=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--loader", choices=["godali", "torch"], default="godali")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--arch", default="resnet18")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args(argv)

    if args.loader == "torch":
        loader = torch_loader(args.data, args.batch_size, args.image_size, args.workers)
        classes = loader.dataset.classes
    else:
        # The swap: same arguments, same batches, no worker processes.
        loader = ImageFolderLoader(args.data, batch_size=args.batch_size, train=True,
                                   image_size=args.image_size, device=args.device,
                                   num_threads=args.workers)
        classes = loader.classes

    device = torch.device(args.device)
    model = torchvision.models.__dict__[args.arch](num_classes=len(classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = torch.nn.CrossEntropyLoss()
    model.train()

    step, seen = 0, 0
    start = time.perf_counter()
    for epoch in range(1000):
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        for i, (images, labels) in enumerate(loader):
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            seen += images.shape[0]
            print("%s: epoch %d step %d/%d loss %.4f" % (args.loader, epoch, i + 1,
                                                        len(loader), loss.item()))
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    elapsed = time.perf_counter() - start
    print("%s: %d steps, %.1f images/s (loading + training)" % (args.loader, step,
                                                                seen / elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
