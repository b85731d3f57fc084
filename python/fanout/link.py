"""Link prediction's losses and ranking figures for Python scripts, exactly fanout-train
``--task link``'s (trainer/link_loss.h, trainer/metrics.h): a script that trains on
``DistEdgeDataLoader``'s or ``fanout.pyg.DistLinkNeighborLoader``'s batches scores its pairs,
then::

    from fanout.link import link_loss, rankings
    loss = link_loss(pos_score, neg_score.view(n, k), "adversarial", temperature=0.5)
    figures = rankings(pos_score, neg_score.view(n, k))   # {"mrr": ..., "hits@1": ..., ...}

``pos`` is ``[n]`` scores (logits), ``neg`` ``[n, k]``: row i holds positive i's negatives.
Works with any PyTorch from 1.13 on.
"""

from typing import Dict, Optional, Sequence

import torch
import torch.nn.functional as F

LOSSES = ("bce", "weighted-bce", "adversarial", "contrastive")


def _check(pos: torch.Tensor, neg: torch.Tensor) -> None:
    if pos.dim() != 1 or neg.dim() != 2 or neg.shape[0] != pos.shape[0]:
        raise ValueError(f"link scores of {tuple(pos.shape)} positives and {tuple(neg.shape)} negatives, "
                         "expected [n] and [n, k]")


def link_loss(pos: torch.Tensor, neg: torch.Tensor, kind: str = "bce", *, weight: Optional[torch.Tensor] = None,
              temperature: float = 1.0) -> torch.Tensor:
    """fanout-train's ``--link-loss``: ``bce`` (mean binary cross-entropy over every pair),
    ``weighted-bce`` (each positive weighted by ``weight`` [n], negatives by 1: GraphStorm's
    weighted cross-entropy), ``adversarial`` (self-adversarial negative sampling: each positive's
    negatives weighted by a detached softmax of their scores times ``temperature``), or
    ``contrastive`` (InfoNCE: the positive as the right class among its negatives, scores divided
    by ``temperature``). A 0-dim loss to minimise."""
    _check(pos, neg)
    if kind not in LOSSES:
        raise ValueError(f"{kind!r} is not a link loss: {', '.join(LOSSES)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    if kind in ("bce", "weighted-bce"):
        scores = torch.cat([pos, neg.flatten()])
        labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg.flatten())])
        if kind == "bce":
            return F.binary_cross_entropy_with_logits(scores, labels)
        if weight is None or weight.shape != pos.shape:
            raise ValueError("weighted-bce: one weight per positive expected")
        weights = torch.cat([weight.to(pos.dtype), torch.ones_like(neg.flatten())])
        return F.binary_cross_entropy_with_logits(scores, labels, weights)
    if kind == "adversarial":
        pos_loss = -F.logsigmoid(pos).mean()
        if neg.shape[1] == 0:
            return pos_loss / 2
        p = torch.softmax(neg.detach() * temperature, 1)
        return (pos_loss - (p * F.logsigmoid(-neg)).sum(1).mean()) / 2
    logits = torch.cat([pos.unsqueeze(1), neg], 1) / temperature
    return -torch.log_softmax(logits, 1)[:, 0].mean()


def ranking_sums(pos: torch.Tensor, neg: torch.Tensor, ks: Sequence[int] = (1, 10, 50, 100)) -> torch.Tensor:
    """``[sum of 1/rank, count, hits@k for each k]`` (float64) of each positive ranked among its
    own negatives (rank 1 + the negatives scoring higher + half the ties): what ranks add up
    across trainers before the means are taken."""
    _check(pos, neg)
    p = pos.detach().to(torch.float32).reshape(-1, 1)
    q = neg.detach().to(torch.float32)
    rank = 1 + (q > p).sum(1).to(torch.float64) + 0.5 * (q == p).sum(1).to(torch.float64)
    sums = [rank.reciprocal().sum(), torch.tensor(float(rank.numel()), dtype=torch.float64)]
    sums += [(rank <= k).sum().to(torch.float64) for k in ks]
    return torch.stack([s.cpu() for s in sums])


def rankings(pos: torch.Tensor, neg: torch.Tensor, ks: Sequence[int] = (1, 10, 50, 100),
             all_reduce: bool = False) -> Dict[str, float]:
    """fanout-train's ranking figures: ``{"mrr": ..., "hits@K": ...}`` over the positives (each
    against its own negatives). ``all_reduce`` sums the figures over the ``torch.distributed``
    group first, as fanout-train does over its trainers (every rank must call it)."""
    sums = ranking_sums(pos, neg, ks)
    if all_reduce and torch.distributed.is_available() and torch.distributed.is_initialized():
        on = "cpu"
        if torch.distributed.get_backend() == "nccl":
            on = torch.device("cuda", torch.cuda.current_device())
        t = sums.to(on)
        torch.distributed.all_reduce(t)
        sums = t.cpu()
    count = max(1.0, float(sums[1]))
    out = {"mrr": float(sums[0]) / count}
    for i, k in enumerate(ks):
        out[f"hits@{k}"] = float(sums[2 + i]) / count
    return out
