"""DALI's nvidia.dali.data_node: the DataNode class (godali._graph holds it)."""

from ._graph import DataNode, newaxis  # noqa: F401

__all__ = ["DataNode"]
