"""PyTorch Lightning with godali.torch's DataLoader, resumable mid-epoch.

godali.torch.DataLoader has state_dict()/load_state_dict() (torchdata's StatefulDataLoader
protocol), which Lightning (>= 2.1) saves in its checkpoints and restores: a run resumed
from a mid-epoch checkpoint trains on exactly the batches the interrupted run had left.

    python3 examples/lightning_train.py --data /tmp/photos --max-steps 6 --save /tmp/a.ckpt
    python3 examples/lightning_train.py --data /tmp/photos --max-steps 12 --resume /tmp/a.ckpt

with a python3 that has PyTorch Lightning (2.2.5 is the last version for Debian's torch
1.13: `pip install --no-deps pytorch-lightning==2.2.5 lightning-utilities==0.11.9
torchmetrics==1.2.1` in a venv; the project's Python, /usr/local/lib/godali-venv/bin/python,
which scripts/setup.sh makes, has them).

Each training step prints "step <global step> labels <labels of its batch>".
"""

import argparse
import warnings

import torch
import torchvision.transforms as T

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

from godali.torch import DataLoader, ImageFolder


class TinyNet(pl.LightningModule):
    def __init__(self, num_classes, lr=0.05):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, num_classes))
        self.lr = lr

    def _register_sharded_tensor_state_dict_hooks_if_available(self):
        # Lightning < 2.3 imports torch.distributed._shard here for torch < 2.1, which
        # fails on Debian 12's torch 1.13 under Python 3.11 (a dataclass with a mutable
        # default); no ShardedTensor is used here.
        pass

    def training_step(self, batch, batch_idx):
        x, y = batch
        print("step %d labels %s sum %.4f" % (self.global_step, y.tolist(), x.sum().item()),
              flush=True)
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="an ImageFolder tree")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2, help="godali engine threads")
    ap.add_argument("--max-steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--save", help="write a checkpoint here at the end")
    ap.add_argument("--resume", help="resume from this checkpoint")
    args = ap.parse_args(argv)

    pl.seed_everything(args.seed, workers=False)
    tf = T.Compose([T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(),
                    T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = ImageFolder(args.data, transform=tf)
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, drop_last=True)
    model = TinyNet(len(ds.classes))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = pl.Trainer(max_steps=args.max_steps, accelerator="cpu", devices=1,
                             logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             num_sanity_val_steps=0)
        trainer.fit(model, train_dataloaders=loader, ckpt_path=args.resume)
    if args.save:
        trainer.save_checkpoint(args.save)
    print("done: %d steps" % trainer.global_step)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
