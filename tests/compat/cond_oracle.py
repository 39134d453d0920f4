"""DALI 2.4 as the oracle of enable_conditionals: generated programs through DALI and godali.

Not part of the shipped package; the companion of oracle.py (same protocol: each
implementation runs every case in a process of its own and pickles what it got, then
`compare` matches them). A case is a pipeline function generated from a seed: nested
`if`/`elif`/`else` on per-sample conditions, `and`/`or`/`not`, variables assigned in one
branch only (unused after, or used: both must refuse), `return` inside branches, dicts
and tuples per branch, values made outside the function (the external sources are made
outside and passed in), operators that fail on the samples a branch or a short-circuit
excludes (an index out of range there), batch_permutation and random operators
inside branches, and branches no sample takes. The function's source is written to a
module file, so that both conversions (DALI's AutoGraph, godali's rewrite) read it.

Outputs are compared exactly, but for the random ones: batch_permutation's merged output
by its multiset (a permutation of the branch's own samples: the multiset is the same in
both whatever the draws), random.uniform's by shape and range (DALI's and godali's
generators differ: the draws cannot match).

    PYTHONPATH=/usr/local/lib/godali-dali python3 tests/compat/cond_oracle.py run dali OUT_D [--long]
    PYTHONPATH=python python3 tests/compat/cond_oracle.py run godali OUT_G [--long]
    python3 tests/compat/cond_oracle.py compare OUT_D OUT_G [--long]

tests/compat/test_cond_oracle.py runs the quick sweep (QUICK programs) in `make test`;
`make oracle-conditionals` runs LONG programs.
"""

import importlib.util
import os
import random
import sys

import numpy as np

import records

SEED = 29
QUICK, LONG = 30, 600
BATCH = 8
ITERS = 2


# --- generating programs ---------------------------------------------------------------

class _Gen:
    """One random program: a pipeline function over int32 scalars x and z (external
    sources made outside the function, passed in)."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.lines = []
        self.defined = ["x", "z"]  # DataNodes defined on every path
        self.n = 0
        self.checks = {}  # output index -> "perm" | "uniform"
        self.outputs = []
        self.pyfunc = False

    def var(self):
        self.n += 1
        return "v%d" % self.n

    def atom(self):
        r = self.r.random()
        if r < 0.75:
            return self.r.choice(self.defined)
        return str(self.r.randint(-3, 3))

    def expr(self, depth=0):
        r = self.r.random()
        if depth > 1 or r < 0.3:
            a = self.r.choice(self.defined)
            return a if self.r.random() < 0.5 else "(%s + %d)" % (a, self.r.randint(-4, 4))
        if r < 0.55:
            return "(%s + %s)" % (self.expr(depth + 1), self.atom())
        if r < 0.7:
            return "(%s * %d)" % (self.expr(depth + 1), self.r.randint(-2, 3))
        if r < 0.8:
            return "(-%s)" % self.expr(depth + 1)
        if r < 0.9:
            return "(%s - %s)" % (self.atom(), self.expr(depth + 1))
        return "math.abs(%s)" % self.expr(depth + 1)

    def pred(self, depth=0):
        r = self.r.random()
        a = self.r.choice(self.defined)
        if r < 0.1:
            return "(%s > 100)" % a  # no sample takes it: an empty branch
        if r < 0.15:
            return "(%s > -100)" % a  # every sample takes it
        if depth < 1 and r < 0.35:
            op = self.r.choice(["and", "or"])
            return "(%s %s %s)" % (self.pred(depth + 1), op, self.pred(depth + 1))
        if depth < 1 and r < 0.45:
            return "(not %s)" % self.pred(depth + 1)
        if depth < 1 and r < 0.55:
            # the right operand fails on the samples the left one decides
            checked = GUARDED % (a, a, a, a)
            if self.r.random() < 0.5:
                return "((%s >= 0) and (%s <= 2) and (%s > 1))" % (a, a, checked)
            return "((%s < 0) or (%s > 2) or (%s > 1))" % (a, a, checked)
        cmp_ = self.r.choice([">", "<", ">=", "<=", "==", "!="])
        return "(%s %s %d)" % (a, cmp_, self.r.randint(-3, 3))

    def emit(self, ind, text):
        self.lines.append("    " * ind + text)

    def block(self, ind, depth, budget):
        """Statements; returns the variables it defines (on every path through it)."""
        made = []
        for _ in range(self.r.randint(1, budget)):
            r = self.r.random()
            if depth < 2 and r < 0.35:
                made += self.if_stmt(ind, depth)
            elif r < 0.45 and depth > 0:
                # a batch operator inside the branch (its draws cannot be compared: only
                # that it runs on the branch's samples; FIXED compares its values)
                v = self.var()
                self.emit(ind, "%s = fn.batch_permutation() * 0 + %s" % (v, self.atom()))
                made.append(v)
                self.defined.append(v)
            elif r < 0.5 and depth > 0:
                # a guarded operator: fails on the samples the branch excludes
                a = self.r.choice(self.defined)
                v = self.var()
                self.emit(ind, "if (%s >= 0) & (%s <= 2):" % (a, a))
                self.emit(ind + 1, "%s = %s" % (v, GUARDED % (a, a, a, a)))
                self.emit(ind, "else:")
                self.emit(ind + 1, "%s = %s" % (v, a))
                made.append(v)
                self.defined.append(v)
            else:
                v = self.r.choice(made + [self.var()]) if made and self.r.random() < 0.2 \
                    else self.var()
                self.emit(ind, "%s = %s" % (v, self.expr()))
                if v not in made:
                    made.append(v)
                if v not in self.defined:
                    self.defined.append(v)
        return made

    def if_stmt(self, ind, depth):
        self.emit(ind, "if %s:" % self.pred())
        outer = list(self.defined)
        t = self.block(ind + 1, depth + 1, 3)
        self.defined = list(outer)
        r = self.r.random()
        if r < 0.2:
            # no else: variables made in the `if` only are one-branch variables
            return [v for v in t if v in outer]
        self.emit(ind, "else:")
        f = self.block(ind + 1, depth + 1, 3)
        self.defined = list(outer)
        both = [v for v in t if v in f or v in outer]
        both += [v for v in f if v in outer and v not in both]
        for v in both:
            if v not in self.defined:
                self.defined.append(v)
        if self.r.random() < 0.15:
            one = [v for v in t + f if v not in both]
            if one:
                # a one-branch variable used after the `if`: both refuse
                self.emit(ind, "%s = %s + 0" % (self.var(), one[0]))
        return both

    def program(self, name):
        self.emit(0, "def %s(x, z):" % name)
        body_start = len(self.lines)
        self.block(1, 0, 4)
        kind = self.r.random()
        outs = [v for v in self.defined if v not in ("x", "z")][-3:] or ["x"]
        if kind < 0.15:
            # a return inside a branch
            self.emit(1, "if %s:" % self.pred())
            self.emit(2, "return %s, %s" % (outs[0], self.expr()))
            self.emit(1, "return %s, %s" % (outs[-1], self.expr()))
        elif kind < 0.3:
            # dicts (and tuples) per branch
            self.emit(1, "if %s:" % self.pred())
            self.emit(2, "d = {'a': %s, 'b': (%s, %s)}" % (self.expr(), outs[0], self.expr()))
            self.emit(1, "else:")
            self.emit(2, "d = {'a': %s, 'b': (%s, %s)}" % (self.expr(), self.expr(), outs[-1]))
            self.emit(1, "return d['a'], d['b'][0], d['b'][1]")
        else:
            self.emit(1, "return %s" % ", ".join(outs))
        if len(self.lines) == body_start:
            self.emit(1, "return x")
        return "\n".join(self.lines) + "\n"


# An operator that fails on the samples a branch or a short-circuit excludes: an index
# out of range (outside 0..2). (DALI 2.4's python_function fails here with "Current
# pipeline object is no longer valid" whatever the function, so it cannot be the oracle.)
GUARDED = "fn.stack(%s, %s * 2, %s * 3)[%s]"


# Hand-written programs for what the generator draws rarely: random operators in branches
# (compared by shape and range), an empty branch with batch_permutation, nesting three deep,
# auto_aug.core.select (DALI builds it on conditionals).
FIXED = {
    "perm_in_branch": ("""def perm_in_branch(x, z):
    if x > 0:
        p = fn.batch_permutation()
    else:
        p = x * 0 - 1
    return p
""", {0: "perm"}),
    "perm_nested": ("""def perm_nested(x, z):
    p = x * 0 - 1
    if x > -2:
        if z < 1:
            p = fn.batch_permutation()
    return p
""", {0: "perm"}),
    "perm_empty": ("""def perm_empty(x, z):
    if x > 100:
        p = fn.batch_permutation()
    else:
        p = x * 0 - 1
    return p
""", {0: "perm"}),
    "uniform_in_branch": ("""def uniform_in_branch(x, z):
    if x > 0:
        u = fn.random.uniform(range=[0, 1]) + 10.0
    else:
        u = fn.random.uniform(range=[0, 1], shape=[1])[0] - 10.0
    return u
""", {0: "uniform"}),
    "uniform_of_input": ("""def uniform_of_input(x, z):
    if x > 0:
        u = fn.random.uniform(x, range=[0, 1]) + 10.0
    else:
        u = fn.cast(x, dtype=types.FLOAT) * 0.0
    return u
""", {0: "uniform"}),
    "deep": ("""def deep(x, z):
    y = x
    if x > -3:
        if z > -2:
            if x + z > 0:
                y = x * 10
            else:
                y = z * 100
        elif z == -3:
            y = -x
    return y, x
""", {}),
    "shortcircuit_and": ("""def shortcircuit_and(x, z):
    ok = (x >= 0) and (x <= 2) and (fn.stack(x, x * 2, x * 3)[x] > 1)
    return ok
""", {}),
    "shortcircuit_or": ("""def shortcircuit_or(x, z):
    ok = (x < 0) or (x > 2) or (fn.stack(x, x * 2, x * 3)[x] > 3) or (z > 1)
    return ok
""", {}),
    "outside_predicate": ("""def outside_predicate(x, z):
    if z:
        y = x + 1
    elif not z:
        y = x
    else:
        y = x * 0
    return y
""", {}),
    "one_branch_unused": ("""def one_branch_unused(x, z):
    if x > 0:
        w = x + 1
        y = w * 2
    else:
        y = z
    return y
""", {}),
    "select3": ("""def select3(x, z):
    ops = [lambda a, b: (a + 1, b), lambda a, b: (a * 2, b - 1), lambda a, b: (-a, b * 3)]
    return select(ops, math.abs(x) % 3, x, b=z)
""", {}),
    "select_nested_if": ("""def select_nested_if(x, z):
    def up(a):
        return a + 10
    def down(a):
        return a - 10
    if z > 0:
        y = select([up, down], x > 0, x)
    else:
        y = select([down, up, down, up], math.abs(x) % 4, z)
    return y
""", {}),
    "split_constant": ("""def split_constant(x, z):
    p = x > 0
    t, _ = fn._conditional.split(x, predicate=p)
    _, f = fn._conditional.split(np.int32(7), predicate=p)
    u, g = fn._conditional.split(np.float32([0.5, 2]), predicate=p)
    return fn._conditional.merge(t, f, predicate=p), fn._conditional.merge(u, g * 2, predicate=p)
""", {}),
    "nested_lambda": ("""def nested_lambda(x, z):
    both = lambda a, b: (a > 0) and (b > 0)
    either = lambda a: (a > 1) or not (a > -2)
    return both(x, z), either(x)
""", {}),
    "nested_def_if": ("""def nested_def_if(x, z):
    def clamp(v, lo):
        if v < lo:
            return v * 0 + lo
        return v
    def pick(a, b):
        out = a
        if b > 0 and a > 0:
            out = fn.stack(a, b, a * b)[b % 3]
        return out
    return clamp(x, -1), pick(x, z)
""", {}),
    "chained_compare": ("""def chained_compare(x, z):
    if -1 < x <= z < 3:
        y = x * 10
    else:
        y = z
    return y, (x < z < 2)
""", {}),
    "methods": ("""class Shift:
    def __init__(self, k):
        self.k = k

    def __call__(self, v):
        if v > 0:
            return v + self.k
        return v

    def either(self, a, b):
        return (a > self.k) or (b < 0)

    @classmethod
    def flip(cls, v):
        if v < 0:
            v = -v
        return v


class Shift3(Shift):
    def __call__(self, v):
        if v < 2:
            v = super().__call__(v) * 3
        return v


def methods(x, z):
    s = Shift(2)
    return s(x), s.either(x, z), Shift.flip(z), Shift3(1)(z)
""", {}),
    "one_branch_used": ("""def one_branch_used(x, z):
    if x > 0:
        w = x + 1
    return w
""", {}),
}


def cases(long=False):
    """(id, source, checks, uses python_function) of every program."""
    out = []
    for name, (src, checks) in FIXED.items():
        out.append((name, src, checks, "python_function" in src))
    for k in range(LONG if long else QUICK):
        g = _Gen(SEED * 100003 + k)
        name = "gen%d" % k
        src = g.program(name)
        out.append((name, src, g.checks, g.pyfunc))
    return out


def _inputs(it):
    rng = np.random.default_rng(SEED + it)
    x = [np.int32(v) for v in rng.integers(-4, 5, BATCH)]
    z = [np.int32(v) for v in rng.integers(-4, 5, BATCH)]
    return x, z


# --- running -------------------------------------------------------------------------------

HEADER = """import numpy as np
from {lib} import fn, types, math
from {lib}.pipeline import pipeline_def
from {lib}.auto_aug.core import select
"""


def run(impl, out_dir, long=False):
    lib = "nvidia.dali" if impl == "dali" else "godali"
    if impl == "dali":
        from nvidia.dali import fn
        from nvidia.dali.pipeline import pipeline_def
    else:
        from godali import fn
        from godali.pipeline import pipeline_def
    os.makedirs(out_dir, exist_ok=True)
    results = {}
    for cid, src, checks, pyfunc in cases(long):
        path = os.path.join(out_dir, "prog_%s.py" % cid)
        with open(path, "w") as fh:
            fh.write(HEADER.format(lib=lib) + "\n" + src)
        try:
            spec = importlib.util.spec_from_file_location("prog_%s" % cid, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            func = getattr(mod, cid)
            feeds = [_inputs(it) for it in range(ITERS)]
            # the external sources are made outside the pipeline function (values from
            # outside used inside the branches)
            xs = fn.external_source(source=[f[0] for f in feeds], cycle=False, batch=True)
            zs = fn.external_source(source=[f[1] for f in feeds], cycle=False, batch=True)
            kw = dict(batch_size=BATCH, num_threads=1, device_id=None, seed=SEED,
                      prefetch_queue_depth=1, enable_conditionals=True)
            if pyfunc:
                kw.update(exec_async=False, exec_pipelined=False)
            pipe = pipeline_def(**kw)(func)(xs, zs)
            pipe.build()
            got = []
            for _ in range(ITERS):
                outs = pipe.run()
                got.append([[np.array(t.as_cpu()[i]) for i in range(len(t))] for t in outs])
            results[cid] = {"ok": got}
        except Exception as e:
            results[cid] = records.error_record(e)
        finally:
            try:
                del pipe
            except NameError:
                pass
    records.save_results(out_dir, results)
    print("cond_oracle: %s ran %d programs -> %s" % (impl, len(results), out_dir))


def _diff(xs, ys, checks):
    for it, (xo, yo) in enumerate(zip(xs, ys)):
        if len(xo) != len(yo):
            return "iteration %d: %d outputs vs %d" % (it, len(xo), len(yo))
        for k, (p, q) in enumerate(zip(xo, yo)):
            if len(p) != len(q):
                return "iteration %d output %d: %d samples vs %d" % (it, k, len(p), len(q))
            check = checks.get(k)
            if check == "perm":
                a = sorted(int(v) for v in p)
                b = sorted(int(v) for v in q)
                if a != b:
                    return "iteration %d output %d: batch_permutation values %s vs %s" % (
                        it, k, a, b)
                continue
            for i, (s, t) in enumerate(zip(p, q)):
                if s.shape != t.shape or s.dtype != t.dtype:
                    return "iteration %d output %d sample %d: %s %s vs %s %s" % (
                        it, k, i, s.shape, s.dtype, t.shape, t.dtype)
                if check == "uniform":
                    if not np.array_equal(np.floor(s), np.floor(t)):
                        return "iteration %d output %d sample %d: %s vs %s (not in the same " \
                               "unit range)" % (it, k, i, s, t)
                elif not np.array_equal(s, t):
                    return "iteration %d output %d sample %d: %s vs %s" % (it, k, i, s, t)
    return None


def compare(dali_dir, godali_dir, long=False, verbose=True):
    a, b = records.load_results(dali_dir, godali_dir)
    rows = []
    for cid, src, checks, _ in cases(long):
        x, y = a.get(cid), b.get(cid)
        if x is None or y is None:
            continue
        if "error" in x or "error" in y:
            if "error" in x and "error" in y:
                status = "refused" if x["error"] == y["error"] else "error"
                rows.append((cid, status, "both refuse: DALI %s: %s | godali %s: %s" % (
                    x["error"], x["message"][:160], y["error"], y["message"][:160])))
            else:
                who = "godali refuses" if "error" in y else "DALI refuses"
                msg = y if "error" in y else x
                rows.append((cid, "error", "%s: %s: %s" % (who, msg["error"], msg["message"])))
            continue
        why = _diff(x["ok"], y["ok"], checks)
        rows.append((cid, "differs" if why else "same", why or ""))
    if verbose:
        for cid, status, why in rows:
            if status != "same":
                print("%-22s %-8s %s" % (cid, status, " ".join(why.split())[:400]))
        n = {s: sum(1 for r in rows if r[1] == s) for s in ("same", "differs", "error",
                                                            "refused")}
        print("cond_oracle: %d programs: %d same, %d differ, %d refused by one side (or with "
              "another exception type), %d by both" % (
                  len(rows), n["same"], n["differs"], n["error"], n["refused"]))
    return rows


def main(argv):
    long = "--long" in argv
    argv = [a for a in argv if a != "--long"]
    if len(argv) == 3 and argv[0] == "run":
        run(argv[1], argv[2], long)
    elif len(argv) == 3 and argv[0] == "compare":
        rows = compare(argv[1], argv[2], long)
        return 0 if all(r[1] in ("same", "refused") for r in rows) else 1
    elif len(argv) == 2 and argv[0] == "show":
        for cid, src, checks, _ in cases(long):
            if cid == argv[1]:
                print(src)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
