"""Your own PyTorch training script on fanout's data path, with DistDGL's names.

A DGL distributed training script ports by changing its imports::

    import fanout.distributed as dist          # was: import dgl.distributed as dist  (or dgl.distributed)

    dist.initialize("ip_config.txt")
    torch.distributed.init_process_group("gloo")        # env:// works under fanout-launch
    g = dist.DistGraph("ogbn-products")
    train_nid = dist.node_split(g.ndata["train_mask"], g.get_partition_book(), force_even=True)
    sampler = dist.NeighborSampler([10, 25])            # input layer first, as DGL
    loader = dist.DistNodeDataLoader(g, train_nid, sampler, batch_size=1000, shuffle=True)
    for input_nodes, seeds, blocks in loader:
        x = blocks[0].srcdata["feat"]; y = blocks[-1].dstdata["label"]
        ...                                             # the model, loss and loop stay yours

and is started with ``fanout-launch ... -- python3 train.py``. Batches come from fanout's own
sampler (threads, or ``fanout-sampler`` processes handing batches over in shared memory), with
their input features and seed labels already fetched; a block converts to a DGL block
(``block.to_dgl()``) or a PyG ``edge_index``. See docs/python.md.
"""

try:
    from fanout import _native  # noqa: F401
except ImportError as e:  # pragma: no cover
    raise ImportError(
        "fanout.distributed needs fanout's native extension (fanout._native): in a clone, run "
        "scripts/build.sh and put python/ and build/python on PYTHONPATH; or `pip install ./python` "
        f"(docs/python.md). The import failed with: {e}") from e

from fanout.distributed.context import exit_client, initialize, is_initialized
from fanout.distributed.dataloader import (Block, DistDataLoader, DistEdgeDataLoader, DistNodeDataLoader,
                                           MultiLayerNeighborSampler, NeighborSampler, PairGraph, TypedPairGraph,
                                           as_edge_prediction_sampler, edge_split, negative_sampler)
from fanout.distributed.embedding import DistEmbedding
from fanout.distributed.graph import DistGraph, DistTensor, GraphPartitionBook, NodePartitionPolicy, node_split
from fanout.distributed import optim  # noqa: E402  (dgl.distributed.optim's SparseAdam, SparseAdagrad)
from fanout.distributed.hetero import HeteroBlock
from fanout.distributed.partition import partition_graph
from fanout._native import FanoutError

NID = "_ID"  # dgl.NID: the global node IDs in a block's srcdata / dstdata
EID = "_ID"  # dgl.EID: the global edge IDs in a block's edata

__all__ = [
    "initialize", "exit_client", "is_initialized", "DistGraph", "DistTensor", "GraphPartitionBook", "node_split",
    "NeighborSampler", "DistNodeDataLoader", "Block", "FanoutError", "NID", "EID", "DistEdgeDataLoader",
    "as_edge_prediction_sampler", "negative_sampler", "edge_split", "PairGraph", "HeteroBlock", "DistEmbedding",
    "NodePartitionPolicy", "optim", "TypedPairGraph", "MultiLayerNeighborSampler", "DistDataLoader",
    "partition_graph",
]
