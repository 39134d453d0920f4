"""DALI 2.4 as the oracle of a few errors' form (tests/compat/dali_errors.py): an operator's
error framed as DALI frames it (the operator's API name, the line of the pipeline
definition that made it, then the error), the conditionals' enforce messages, DALI's
words for a wrong number of inputs and for an argument input on the GPU, and
external_source's num_outputs taking an array whose first dimension is the outputs.
Needs DALI (skips without it; GODALI_STRICT_REFERENCES=1 makes that a failure)."""

import fnmatch
import json
import os
import sys

import sidebyside

HERE = os.path.dirname(os.path.abspath(__file__))

FRAME = ("Critical error in pipeline:\nError in CPU operator `LIB.fn._conditional.%s`,\n"
         "which was used in the pipeline definition with the following traceback:\n\n"
         "  File \"*dali_errors.py\", line *, in pipe\n    if %s:\n\nencountered:\n\n")
# What both implementations' messages must match (fnmatch, DALI's test globs' form).
GLOBS = {
    "split_on_vector": FRAME % ("split", "cond") + "*Assert on \"dim == 0\" failed: "
                       "Conditions inside `if` statements are restricted to scalar*",
    "merge_of_types": FRAME % ("merge", "pred") + "*Assert on \"base_input.type() == "
                      "input.type()\" failed: Divergent data found*",
    "too_many_inputs": "Operator LIB.fn.random.normal expects from 0 to 1 inputs, but "
                       "received 2.",
    "arg_input_on_gpu": "Invalid device \"gpu\" for argument 'probability' of operator "
                        "'LIB.fn.random.coin_flip'. Named arguments must be on CPU.*",
}
BUILTIN = ("IndexError", "TypeError", "ValueError", "RuntimeError")


def _results(out):
    with open(out) as f:
        return {r["name"]: r for r in map(json.loads, f)}


def test_errors_as_dali_gives_them(tmp_path):
    sidebyside.require_dali("the error-form comparison")
    script = os.path.join(HERE, "dali_errors.py")
    outs = {}
    for impl in ("dali", "godali"):
        outs[impl] = str(tmp_path / impl)
    sidebyside.run_both(
        lambda impl: ["-c", "import runpy, sys; sys.stdout = open(%r, 'w'); "
                      "runpy.run_path(%r, run_name='__main__')" % (outs[impl], script)],
        timeout=300, python=sys.executable)
    dali, godali = _results(outs["dali"]), _results(outs["godali"])
    assert set(dali) == set(godali) == set(GLOBS) | {"outputs_from_one_array"}
    for name, glob in GLOBS.items():
        for impl, r in (("dali", dali[name]), ("godali", godali[name])):
            assert "msg" in r, (impl, name, r)
            # DALI's test globs match anywhere in the message (nose_utils: re.search)
            assert fnmatch.fnmatchcase(r["msg"], "*" + glob + "*"), (impl, name, r["msg"])
        # godali raises (at least) the built-in exception type DALI raises
        want = [t for t in dali[name]["types"] if t in BUILTIN][0]
        assert want in godali[name]["types"], (name, want, godali[name]["types"])
    assert godali["outputs_from_one_array"] == dali["outputs_from_one_array"]
