"""A small conv net on MNIST digits with Adadelta and a StepLR schedule.

Uses the MNIST subset that ships with lamina-nn (5,000 training and 1,000 test
images), so nothing is downloaded. Laid out like the classic PyTorch MNIST
script: a ``Net`` module, ``train``/``test`` functions, an epoch loop that
steps the scheduler once per epoch.

Run: ``python examples/pytorch-style/conv_mnist_like.py --steps 200``
"""

from __future__ import annotations

import argparse

import lamina.autograd as ag
import lamina.nn.functional as F
from lamina import data, nn, optim
from lamina.data import transforms


class Net(nn.Module):
    """conv(1->8) -> conv(8->16) -> max-pool -> dropout -> fc(64) -> fc(10)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = ag.flatten(x, 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def train(model, device, loader, optimizer, epoch: int, max_batches: int) -> list[float]:
    """One (possibly truncated) epoch; returns the loss of every batch."""
    model.train()
    losses = []
    for batch_idx, (x, target) in enumerate(loader):
        if batch_idx >= max_batches:
            break
        x, target = x.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % 20 == 0:
            print(f"epoch {epoch} batch {batch_idx:3d} | loss {loss:.4f}")
    return losses


def test(model, device, loader, max_batches: int) -> float:
    """Accuracy over the first ``max_batches`` test batches."""
    model.eval()
    correct = total = 0
    with ag.no_grad():
        for batch_idx, (x, target) in enumerate(loader):
            if batch_idx >= max_batches:
                break
            x, target = x.to(device), target.to(device)
            pred = model(x).argmax(dim=1)
            correct += int((pred == target).sum().item())
            total += target.shape[0]
    accuracy = correct / max(total, 1)
    print(f"test accuracy {accuracy:.3f} on {total} images")
    return accuracy


def main(steps: int = 200, device: str = "cpu", batch_size: int = 32,
         steps_per_epoch: int = 25, seed: int = 0) -> list[float]:
    """Train for ``steps`` batches in epochs of ``steps_per_epoch``; return the losses."""
    ag.manual_seed(seed)
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_loader = data.DataLoader(data.MNIST(train=True, transform=tf),
                                   batch_size=batch_size, shuffle=True, generator=seed)
    test_loader = data.DataLoader(data.MNIST(train=False, transform=tf), batch_size=100)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)

    losses: list[float] = []
    epoch = 1
    while len(losses) < steps:
        todo = min(steps_per_epoch, steps - len(losses))
        losses += train(model, device, train_loader, optimizer, epoch, todo)
        scheduler.step()
        epoch += 1
    test(model, device, test_loader, max_batches=2)
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    main(steps=args.steps, device=args.device)
