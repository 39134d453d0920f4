"""Reference decodes for package codec's tests, by PIL.

Reads a JSON list of jobs on stdin: {"path": str, "mode": "RGB" | "L" | "Y", "transpose": bool,
"draft": [w, h] or null}. For job i it writes PIL's pixels, Image.open(path)
[-> draft("RGB", (w, h)), JPEG DCT scaling] [-> ImageOps.exif_transpose]
-> convert("RGB") [-> convert("L")], as raw bytes (mode "Y": a JPEG's luma as libjpeg
decodes it, draft("L", size) -> convert("L"); other images as "L") to OUTDIR/i.raw, and prints one JSON
list with, per job, {"ok", "w", "h", "c", "orientation"} or {"ok": false, "err"}.
"""
import json
import os
import sys

from PIL import Image, ImageOps


def run(job, path_out):
    with Image.open(job["path"]) as im:
        try:
            orientation = im.getexif().get(0x0112)
        except Exception:  # PIL can fail on broken EXIF where decoding still works
            orientation = None
        if job.get("draft"):
            im.draft("RGB", tuple(job["draft"]))
        if job.get("mode") == "Y":
            im.draft("L", im.size)
        if job.get("transpose"):
            im = ImageOps.exif_transpose(im)
        rgb = im.convert("RGB")
        if job.get("mode") == "Y" and im.mode == "L":
            rgb = im
        elif job.get("mode") in ("L", "Y"):
            rgb = rgb.convert("L")
        with open(path_out, "wb") as f:
            f.write(rgb.tobytes())
        return {
            "ok": True,
            "w": rgb.width,
            "h": rgb.height,
            "c": len(rgb.getbands()),
            "orientation": orientation if isinstance(orientation, int) else 0,
        }


def main():
    outdir = sys.argv[1]
    jobs = json.load(sys.stdin)
    results = []
    for i, job in enumerate(jobs):
        try:
            results.append(run(job, os.path.join(outdir, "%d.raw" % i)))
        except Exception as e:  # the test compares failures, so report them all
            results.append({"ok": False, "err": "%s: %s" % (type(e).__name__, e)})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
