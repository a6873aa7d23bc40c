"""Data and model of the digits example: scikit-learn's 8x8 digits (shipped offline) and a small MLP."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn


def load_data(seed: int = 0):
    """Fixed 80/20 split of the 1,797 digit images as float tensors scaled to 0..1."""
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.from_numpy(np.random.default_rng(seed).permutation(len(x)))
    split = int(0.8 * len(x))
    return (x[order[:split]], y[order[:split]]), (x[order[split:]], y[order[split:]])


def make_model(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def batch_indices(n: int, batch_size: int, step: int, seed: int) -> torch.Tensor:
    """Indices of global batch `step`: each epoch is a permutation seeded by (seed, epoch), so resume is exact."""
    per_epoch = n // batch_size
    epoch, within = divmod(step, per_epoch)
    gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    perm = torch.randperm(n, generator=gen)
    return perm[within * batch_size:(within + 1) * batch_size]
