"""DALI operators that godali does not implement, by name.

DALI's scripts and tests name operators at import time (lists of `fn.*` functions at
module level) that a given program may never call: the speech and audio operators, and
operators DALI has only for the GPU. godali gives these names a function that raises
NotImplementedError, naming the operator and why, when it is called; the rest of such a
script runs. The names are not operators of the library: they have no schema and are
absent from `godali.ops`.
"""

# name -> why godali lacks it
MISSING = {
    "audio_resample": "a speech/audio operator",
    "decoders.audio": "a speech/audio operator",
    "mel_filter_bank": "a speech/audio operator",
    "mfcc": "a speech/audio operator",
    "nonsilent_region": "a speech/audio operator",
    "power_spectrum": "a speech/audio operator",
    "preemphasis_filter": "a speech/audio operator",
    "spectrogram": "a speech/audio operator",
    "to_decibels": "a speech/audio operator",
    "jitter": "a GPU-only operator in DALI",
}


# What else of DALI's surface godali has by name but refuses when called (NotImplementedError):
# the callable's path under godali -> what it refuses. With MISSING and the AutoAugment policies that are not built in
# (auto_aug.auto_augment.UNSUPPORTED_POLICIES) this is the list that
# scripts/gen_operator_reference.py writes into docs/not-supported.md; the tests call
# each entry and check that it raises (python/tests/test_not_supported.py).
UNSUPPORTED = {
    "plugin_manager.load_library": "DALI plugin libraries (C++ operators built against DALI)",
    "plugin_manager.load_directory": "DALI plugin libraries (C++ operators built against DALI)",
    "pipeline.DataNode.cpu": "moving GPU data back to the host inside a pipeline (call "
                             "as_cpu() on the output)",
    "tensors.Tensor.copy_to_external": "copying GPU data (TensorGPU, TensorListGPU) to an "
                                       "external pointer (torch.from_dlpack(tensor) and "
                                       "copy_() instead)",
}


def _missing_function(name, why):
    def missing(*args, **kwargs):
        raise NotImplementedError("godali: fn.%s is %s, which godali does not implement"
                                  % (name, why))
    missing.__name__ = name.rsplit(".", 1)[-1]
    missing.__qualname__ = name
    missing.__module__ = "godali.fn"
    missing.__doc__ = "DALI's fn.%s: %s, not implemented in godali (calling it raises " \
                      "NotImplementedError)." % (name, why)
    return missing


def add_missing(root, namespace_type):
    """Adds the names of MISSING that root (godali.fn) lacks."""
    for name, why in sorted(MISSING.items()):
        parts = name.split(".")
        ns, path = root, "godali.fn"
        for p in parts[:-1]:
            path += "." + p
            nxt = ns._members.get(p)
            if nxt is None:
                nxt = namespace_type(path)
                ns._add(p, nxt)
            ns = nxt
        if parts[-1] not in ns._members:
            ns._add(parts[-1], _missing_function(name, why))
