"""torch_geometric.data's containers as far as fanout.pyg and its tests use them."""

from collections import namedtuple


class _Store:
    """An attribute bag with PyG's ``in`` and ``to``."""

    def __contains__(self, key):
        return key in self.__dict__

    def __getitem__(self, key):
        return self.__dict__[key]

    def keys(self):
        return list(self.__dict__)

    def _moved(self, device):
        for k, v in list(self.__dict__.items()):
            if hasattr(v, "to") and hasattr(v, "device"):
                self.__dict__[k] = v.to(device)


class Data(_Store):
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def to(self, device):
        self._moved(device)
        return self


class HeteroData:
    """Node and edge stores by type (``data["paper"]``, ``data["paper", "cites", "paper"]``),
    graph-wide attributes as plain attributes."""

    def __init__(self):
        self.__dict__["_stores"] = {}

    def __getitem__(self, key):
        return self._stores.setdefault(tuple(key) if isinstance(key, list) else key, _Store())

    def __contains__(self, key):
        return key in self.__dict__ or key in self._stores

    @property
    def node_types(self):
        return [k for k in self._stores if isinstance(k, str)]

    @property
    def edge_types(self):
        return [k for k in self._stores if isinstance(k, tuple)]

    def to(self, device):
        for s in self._stores.values():
            s._moved(device)
        return self


TensorAttr = namedtuple("TensorAttr", ["group_name", "attr_name", "index"], defaults=(None,))
EdgeAttr = namedtuple("EdgeAttr", ["edge_type", "layout", "is_sorted", "size"], defaults=(False, None))
