"""DALI's former module nvidia.dali.edge: EdgeReference is the old name of DataNode."""

from ._graph import DataNode as EdgeReference  # noqa: F401
