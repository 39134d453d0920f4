"""What the side-by-side runners (oracle.py, cond_oracle.py, propsweep.py) record of a
case and where: one shape of error record and one results file, written under DALI and
under godali and read back by their compare steps. No dependencies beyond the standard
library: the runners import it in the process that imports DALI or godali."""

import os
import pickle


def error_record(e, mro=False):
    """The exception's type and message (long messages keep their head and tail)."""
    msg = " ".join(str(e).split())
    rec = {"error": type(e).__name__,
           "message": msg if len(msg) < 600 else msg[:150] + " ... " + msg[-450:]}
    if mro:
        rec["mro"] = [c.__name__ for c in type(e).__mro__]
    return rec


def save_results(out_dir, results):
    with open(os.path.join(out_dir, "results.pkl"), "wb") as fh:
        pickle.dump(results, fh)


def load_results(dali_dir, godali_dir):
    """The two runs' results: (DALI's, godali's)."""
    out = []
    for d in (dali_dir, godali_dir):
        with open(os.path.join(d, "results.pkl"), "rb") as fh:
            out.append(pickle.load(fh))
    return out
