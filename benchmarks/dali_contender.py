"""NVIDIA DALI's contenders for `python -m godali_tools bench` (dali-cpu, val-dali,
decode-dali).

DALI is a reference godali is measured against, never a dependency of the godali
package: this worker lives in the source checkout, and the bench loads it from here
when it runs from a checkout and nvidia.dali is installed.
"""


def worker(cfg: dict, rn50_pipeline, timed) -> dict:
    """worker times DALI's own CPU pipeline, built by the bench's rn50_pipeline with
    DALI's fn/pipeline_def/types (the same operators and arguments as godali-cpu)."""
    import numpy as np
    import torch
    import nvidia.dali as dali
    from nvidia.dali import fn, pipeline_def, types

    decode_only = cfg["contender"] == "decode-dali"
    pipe = rn50_pipeline(cfg, decode_only, fn, pipeline_def, types)

    def batches():
        while True:
            out = pipe.run()
            if decode_only:
                yield out
                continue
            # DALI's CPU tensors export the buffer protocol: torch shares the memory.
            images = torch.from_numpy(np.asarray(out[0].as_tensor()))
            labels = torch.from_numpy(np.asarray(out[1].as_tensor()))
            yield images, labels

    res = timed(batches(), cfg, lambda: None)
    res["versions"] = {"dali": dali.__version__}
    del pipe
    return res
