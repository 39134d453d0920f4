"""DALI's nvidia.dali.auto_aug.core._args: forbid_unused_kwargs."""


def forbid_unused_kwargs(augments, kwargs, call_name):
    """Raises if a keyword argument is taken by none of the augmentations (DALI's check
    of the extra arguments a policy call passes on to its augmentations)."""
    used = set()
    for aug in augments:
        accepted = getattr(aug, "_accepted_kwargs", None)
        if accepted is not None:
            used.update(accepted())
    unused = [k for k in kwargs if k not in used]
    if len(unused) == 1:
        raise Exception("The kwarg `%s` is not used by any of the augmentations passed to "
                        "%s." % (unused[0], call_name))
    if unused:
        raise Exception("The kwargs `%s` are not used by any of the augmentations passed to "
                        "%s." % (", ".join(unused), call_name))
