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
    if unused:
        subject, verb = ("kwarg", "is") if len(unused) == 1 else ("kwargs", "are")
        raise Exception("The %s got unexpected %s. The %s `%s` %s not used by any of the "
                        "augmentations." % (call_name, subject, subject, ", ".join(unused), verb))
