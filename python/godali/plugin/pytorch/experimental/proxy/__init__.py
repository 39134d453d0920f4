"""DALI's nvidia.dali.plugin.pytorch.experimental.proxy (DALIServer, DataLoader).

DALI's proxy runs a pipeline whose input is an fn.external_source fed, sample by sample,
from a torch Dataset's worker processes. godali has no external_source operator yet, so
the proxy cannot be built on it: DALIServer raises NotImplementedError naming what is
missing, and DataLoader is torch's own (it works with any Dataset, without a proxy).
"""

from torch.utils.data import DataLoader  # noqa: F401

__all__ = ["DALIServer", "DataLoader"]


class DALIServer:
    """DALI's DALIServer(pipeline, deterministic=False). Not available in godali: it
    feeds the pipeline through fn.external_source, which godali does not have."""

    def __init__(self, pipeline, deterministic=False):
        raise NotImplementedError(
            "godali: plugin.pytorch.experimental.proxy.DALIServer needs fn.external_source "
            "(a pipeline input fed from Python), which godali does not implement yet; "
            "read the files with fn.readers.file and iterate with "
            "godali.plugin.pytorch.DALIGenericIterator instead")
