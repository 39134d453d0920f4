"""Writes image variants with PIL for package codec's tests.

Usage: pil_encode.py SOURCE OUTDIR. SOURCE is any image PIL reads; a 101x67 crop of it
(odd sizes on purpose) is saved in the formats and modes below, each file named after
what it exercises. Files PIL cannot write here are left out.
"""
import io
import os
import sys

from PIL import Image


def exif_with_orientation(o):
    exif = Image.Exif()
    exif[0x0112] = o
    return exif.tobytes()


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    rgb = Image.open(src).convert("RGB").crop((40, 30, 141, 97))
    alpha = Image.linear_gradient("L").resize(rgb.size)
    rgba = rgb.copy()
    rgba.putalpha(alpha)
    gray = rgb.convert("L")
    pal = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=50)
    pal_trns = pal.copy()
    pal_trns.info["transparency"] = 3

    def save(name, im, **kw):
        try:
            im.save(os.path.join(outdir, name), **kw)
        except Exception as e:  # a codec missing from this PIL build
            sys.stderr.write("skip %s: %s\n" % (name, e))

    # WebP: lossless, lossy with alpha, lossless with alpha, EXIF orientations.
    save("lossless.webp", rgb, lossless=True)
    save("lossy_alpha.webp", rgba, quality=80)
    save("lossless_alpha.webp", rgba, lossless=True)
    for o in range(1, 9):
        save("exif%d.webp" % o, rgb, quality=85, exif=exif_with_orientation(o))
        save("exif%d.png" % o, rgb, exif=exif_with_orientation(o))
        save("orient%d.tif" % o, rgb, tiffinfo={274: o})
    # PNG modes.
    save("gray.png", gray)
    save("la.png", gray.convert("LA"))
    save("bilevel.png", gray.convert("1"))
    save("palette.png", pal)
    save("palette_trns.png", pal_trns, transparency=3)
    save("rgba.png", rgba)
    # TIFF modes and compressions.
    save("raw.tif", rgb)
    save("lzw.tif", rgb, compression="tiff_lzw")
    save("deflate.tif", rgb, compression="tiff_adobe_deflate")
    save("packbits.tif", rgb, compression="packbits")
    save("gray.tif", gray)
    save("bilevel.tif", gray.convert("1"))
    save("palette.tif", pal)
    save("rgba.tif", rgba)
    save("cmyk.tif", rgb.convert("CMYK"))
    # BMP modes.
    save("bilevel.bmp", gray.convert("1"))
    save("gray.bmp", gray)
    save("palette.bmp", pal)
    save("rgb.bmp", rgb)
    # GIF with a transparent index, PPM/PGM.
    save("palette_trns.gif", pal_trns, transparency=3)
    save("gray.gif", gray)
    save("rgb.ppm", rgb)
    save("gray.pgm", gray)


if __name__ == "__main__":
    main()
