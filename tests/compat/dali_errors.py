"""Programs whose errors (and one external_source form) DALI 2.4 and godali must give
alike; run once under each (test_dali_errors.py): prints one JSON line per program with
the exception's type names and message, the library's name replaced by "LIB"."""

import json
import sys

import numpy as np

try:
    import nvidia.dali as lib
    NAME = "nvidia.dali"
except ImportError:
    import godali as lib
    NAME = "godali"
fn, types = lib.fn, lib.types
pipeline_def = lib.pipeline_def


def split_on_vector():
    @pipeline_def(enable_conditionals=True, batch_size=3, num_threads=1, device_id=None)
    def pipe():
        pred = fn.random.coin_flip(dtype=types.BOOL, seed=1)
        cond = fn.stack(pred, pred)
        if cond:
            out = types.Constant([1])
        else:
            out = types.Constant([0])
        return out
    p = pipe()
    p.build()
    p.run()


def merge_of_types():
    @pipeline_def(enable_conditionals=True, batch_size=3, num_threads=1, device_id=None)
    def pipe():
        pred = fn.random.coin_flip(dtype=types.BOOL, seed=2)
        if pred:
            out = types.Constant([7])
        else:
            out = types.Constant([7.5])
        return out
    p = pipe()
    p.build()
    p.run()


def too_many_inputs():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        return fn.random.normal([3, 4], [5])
    pipe().build()


def arg_input_on_gpu():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        p = fn.random.uniform(range=[0, 1]).gpu()
        return fn.random.coin_flip(probability=p)
    pipe().build()


def outputs_from_one_array():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        a, b = fn.external_source(source=lambda: np.arange(24).reshape(2, 3, 4), batch=False,
                                  num_outputs=2, layout=["AB", "CD"])
        return a, b
    p = pipe()
    p.build()
    a, b = p.run()
    return [np.array(a[0]).tolist(), np.array(b[1]).tolist(), a.layout(), b.layout()]


def main():
    for name in ["split_on_vector", "merge_of_types", "too_many_inputs", "arg_input_on_gpu",
                 "outputs_from_one_array"]:
        try:
            res = {"value": globals()[name]()}
        except Exception as e:
            res = {"types": [c.__name__ for c in type(e).__mro__],
                   "msg": str(e).replace(NAME, "LIB")}
        print(json.dumps(dict(res, name=name)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
