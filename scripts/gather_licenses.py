#!/usr/bin/env python3
"""gather_licenses.py OUT [--tags TAGS]...: the licence texts of everything godali's
libraries bundle, in one folder for the wheel and `cmake --install`.

OUT receives godali's LICENSE and THIRD_PARTY_NOTICES.md, licenses/* (libjpeg-turbo,
DLPack), and under go/ the licence files of every Go module compiled into ./capi (one
`go list -deps` per tag set, so that the CUDA flavour's modules are there too) and of the
Go standard library, read from the module cache. go/MODULES.txt lists each module,
version and the files that carry its licence; a module without one is an error, so that
a new dependency cannot ship without its licence.
"""

import argparse
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LICENCE_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "COPYRIGHT")


def _go(args, cwd=REPO):
    r = subprocess.run([os.environ.get("GO", "go")] + args, cwd=cwd, capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit("gather_licenses: go %s failed:\n%s" % (" ".join(args), r.stderr))
    return r.stdout


def _licence_files(folder):
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names
            if n.upper().startswith(LICENCE_PREFIXES) and os.path.isfile(os.path.join(folder, n))]


def go_modules(tag_sets):
    """{module path: (version, module dir, set of licence files)} for every non-main
    module whose packages ./capi compiles, walking from each package's folder up to its
    module's root (a C library vendored in a subfolder may carry its own licence)."""
    mods = {}
    fmt = ("{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}"
           "{{with .Replace}} {{.Version}} {{.Dir}}{{end}}{{end}}{{end}}\t{{.Dir}}")
    for tags in tag_sets:
        out = _go(["list", "-tags", tags, "-deps", "-f", fmt, "./capi"])
        for line in out.splitlines():
            mod, _, pkg_dir = line.partition("\t")
            if not mod:
                continue
            fields = mod.split(" ")
            if len(fields) == 5:  # a replaced module: the replacement's version and dir
                fields = fields[:1] + fields[3:]
            path, version, root = fields[0], fields[1], fields[2]
            _, _, files = mods.setdefault(path, (version, root, set()))
            d = pkg_dir
            while True:
                files.update(_licence_files(d))
                if os.path.samefile(d, root) or os.path.dirname(d) == d:
                    break
                d = os.path.dirname(d)
    return mods


def flat_name(module, version, path, root):
    rel = os.path.relpath(path, root).replace(os.sep, "_")
    return "%s@%s.%s" % (module.replace("/", "_"), version, rel)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--tags", action="append", default=None,
                    help="build tags of one flavour ('' and 'cuda' by default)")
    args = ap.parse_args(argv)
    tag_sets = args.tags if args.tags is not None else ["", "cuda"]

    out = os.path.abspath(args.out)
    if os.path.isdir(out):
        shutil.rmtree(out)
    go_dir = os.path.join(out, "go")
    os.makedirs(go_dir)
    for name in ("LICENSE", "THIRD_PARTY_NOTICES.md"):
        shutil.copy(os.path.join(REPO, name), out)
    for name in sorted(os.listdir(os.path.join(REPO, "licenses"))):
        shutil.copy(os.path.join(REPO, "licenses", name), out)

    index = []
    goroot = _go(["env", "GOROOT"]).strip()
    goversion = _go(["env", "GOVERSION"]).strip()
    std = "go-standard-library@%s.LICENSE" % goversion
    shutil.copy(os.path.join(goroot, "LICENSE"), os.path.join(go_dir, std))
    index.append("std %s %s" % (goversion, std))
    missing = []
    for module, (version, root, files) in sorted(go_modules(tag_sets).items()):
        if not files:
            missing.append("%s %s (%s)" % (module, version, root))
            continue
        names = []
        for f in sorted(files):
            name = flat_name(module, version, f, root)
            shutil.copy(f, os.path.join(go_dir, name))
            names.append(name)
        index.append("%s %s %s" % (module, version, " ".join(names)))
    if missing:
        sys.exit("gather_licenses: no licence file found for: " + "; ".join(missing))
    with open(os.path.join(go_dir, "MODULES.txt"), "w") as f:
        f.write("# Go modules compiled into libgodali*.so: module version licence-files\n")
        f.write("\n".join(index) + "\n")
    print("gather_licenses: %d Go modules and the standard library -> %s"
          % (len(index) - 1, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
