"""DALI's nvidia.dali.data_node: the DataNode class (godali._graph holds it)."""

from ._graph import DataNode

__all__ = ["DataNode"]
