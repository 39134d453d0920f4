"""DALI's nvidia.dali.auto_aug.core._select: select(), which applies to each sample the
augmentation a per-sample index picks from a list."""

from ... import _conditionals


def split_samples_among_ops(op_range_lo, op_range_hi, ops, selected_op_idx, op_args,
                            op_kwargs):
    """ops[selected_op_idx](*op_args, **op_kwargs) per sample, for the ops in
    [op_range_lo, op_range_hi]: as DALI, the range is halved by an `if` on the index
    (selected_op_idx <= mid), so each augmentation runs on its samples only and the
    results are merged back into the batch's order."""
    if op_range_lo == op_range_hi:
        return ops[op_range_lo](*op_args, **op_kwargs)
    mid = (op_range_lo + op_range_hi) // 2
    return _conditionals.choose(
        selected_op_idx <= mid,
        lambda: split_samples_among_ops(op_range_lo, mid, ops, selected_op_idx, op_args,
                                        op_kwargs),
        lambda: split_samples_among_ops(mid + 1, op_range_hi, ops, selected_op_idx, op_args,
                                        op_kwargs),
        name="select")


def select(ops, selected_op_idx, *op_args, **op_kwargs):
    """Applies to each sample the operation of `ops` that `selected_op_idx` names, as if
    by calling `ops[selected_op_idx](*op_args, **op_kwargs)` (DALI's
    auto_aug.core.select). `selected_op_idx` is a batch of indices in [0, len(ops) - 1]
    (or a Python int); DataNodes among the arguments are split into the partial batches
    of each operation. A DataNode index needs @pipeline_def(enable_conditionals=True)."""
    ops = list(ops)
    if not ops:
        raise ValueError("godali: auto_aug.core.select: `ops` is empty; give at least one "
                         "operation to select from")
    return split_samples_among_ops(0, len(ops) - 1, ops, selected_op_idx, op_args, op_kwargs)
