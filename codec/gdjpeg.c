/*
 * gdjpeg.c: libjpeg-turbo decoding for package codec, plus the row writer (colour
 * conversion, column crop, EXIF orientation) that every format shares.
 */
#include "gdjpeg.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

/* Rows requested per jpeg_read_scanlines call when rows go through the scratch block;
 * more than libjpeg's rec_outbuf_height so that one call can return everything it has. */
#define GD_ROW_BLOCK 4

/* GD_MAX_SCANS bounds the scans of a progressive JPEG. Each scan passes over the whole
 * coefficient buffer, so a small file with thousands of tiny scans takes minutes to
 * decode; real encoders write at most a few dozen. */
#define GD_MAX_SCANS 1000

struct gd_err {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  int eof;            /* the data ended before the image did */
  int too_many_scans; /* more than GD_MAX_SCANS */
};

struct gd_jpeg_impl {
  struct jpeg_decompress_struct cinfo;
  struct gd_err err;
  struct jpeg_progress_mgr progress;
  int created;
  unsigned char *rows; /* grow-only scratch for GD_ROW_BLOCK decoded rows */
  size_t rows_cap;
};

static void on_error_exit(j_common_ptr c) {
  struct gd_err *e = (struct gd_err *)c->err;
  longjmp(e->jb, 1);
}

/* PIL decodes a truncated JPEG only when told to load truncated images; libjpeg instead
 * pads the data with a fake EOI and warns. Treat that warning as the error PIL raises and
 * stop at once; other warnings (corrupt but decodable data) are tolerated as PIL does. */
static void on_emit_message(j_common_ptr c, int level) {
  struct gd_err *e = (struct gd_err *)c->err;
  if (level >= 0) {
    return;
  }
  if (c->err->msg_code == JWRN_JPEG_EOF) {
    e->eof = 1;
    longjmp(e->jb, 1);
  }
  c->err->num_warnings++;
}

static void on_output_message(j_common_ptr c) { (void)c; }

static void on_progress(j_common_ptr c) {
  if (c->is_decompressor && ((j_decompress_ptr)c)->input_scan_number > GD_MAX_SCANS) {
    struct gd_err *e = (struct gd_err *)c->err;
    e->too_many_scans = 1;
    longjmp(e->jb, 1);
  }
}

/* eoi_ahead says whether the data libjpeg has still to read holds an EOI marker (or
 * libjpeg has met it already). In entropy-coded data every 0xFF byte is followed by
 * 0x00 or a restart marker, so an 0xFF 0xD9 pair there is the EOI itself. */
static int eoi_ahead(j_decompress_ptr ci) {
  if (ci->unread_marker == 0xD9) {
    return 1;
  }
  const unsigned char *p = ci->src->next_input_byte;
  size_t n = ci->src->bytes_in_buffer;
  while (p != NULL && n >= 2) {
    const unsigned char *q = memchr(p, 0xFF, n - 1);
    if (q == NULL) {
      return 0;
    }
    if (q[1] == 0xD9) {
      return 1;
    }
    n -= (size_t)(q - p) + 1;
    p = q + 1;
  }
  return 0;
}

gd_jpeg *gd_jpeg_new(void) {
  gd_jpeg *s = calloc(1, sizeof *s);
  if (s == NULL) {
    return NULL;
  }
  gd_jpeg_impl *m = calloc(1, sizeof *m);
  if (m == NULL) {
    free(s);
    return NULL;
  }
  s->impl = m;
  m->cinfo.err = jpeg_std_error(&m->err.pub);
  m->err.pub.error_exit = on_error_exit;
  m->err.pub.emit_message = on_emit_message;
  m->err.pub.output_message = on_output_message;
  if (setjmp(m->err.jb)) {
    free(m);
    free(s);
    return NULL;
  }
  jpeg_create_decompress(&m->cinfo);
  m->created = 1;
  m->progress.progress_monitor = on_progress;
  m->cinfo.progress = &m->progress;
  return s;
}

void gd_jpeg_free(gd_jpeg *s) {
  if (s == NULL) {
    return;
  }
  gd_jpeg_impl *m = s->impl;
  if (m != NULL) {
    if (m->created) {
      jpeg_destroy_decompress(&m->cinfo);
    }
    free(m->rows);
    free(m);
  }
  free(s);
}

/* forget_input drops libjpeg's reference to the caller's (Go) buffer. */
static void forget_input(gd_jpeg_impl *m) {
  if (m->cinfo.src != NULL) {
    m->cinfo.src->next_input_byte = NULL;
    m->cinfo.src->bytes_in_buffer = 0;
  }
}

/* grow_rows makes the row buffer at least need bytes; 0 when out of memory. */
static int grow_rows(gd_jpeg_impl *m, size_t need) {
  if (m->rows_cap < need) {
    unsigned char *p = realloc(m->rows, need);
    if (p == NULL) {
      return 0;
    }
    m->rows = p;
    m->rows_cap = need;
  }
  return 1;
}

static void begin(gd_jpeg *s) {
  s->impl->err.eof = 0;
  s->impl->err.too_many_scans = 0;
  s->impl->err.pub.num_warnings = 0;
  s->msg[0] = '\0';
}

/* fail_libjpeg runs after a longjmp: it records libjpeg's message and resets the
 * decompress object for the next image. */
static int fail_libjpeg(gd_jpeg *s) {
  gd_jpeg_impl *m = s->impl;
  int eof = m->err.eof;
  if (eof) {
    snprintf(s->msg, sizeof s->msg, "Premature end of JPEG file");
  } else if (m->err.too_many_scans) {
    snprintf(s->msg, sizeof s->msg, "more than %d scans (a decompression bomb?)", GD_MAX_SCANS);
  } else {
    char buf[JMSG_LENGTH_MAX];
    (*m->err.pub.format_message)((j_common_ptr)&m->cinfo, buf);
    snprintf(s->msg, sizeof s->msg, "%s", buf);
  }
  jpeg_abort_decompress(&m->cinfo);
  forget_input(m);
  return eof ? 1 : -1;
}

/* fail_plain reports an error found by this file rather than by libjpeg. */
static int fail_plain(gd_jpeg *s, const char *msg) {
  snprintf(s->msg, sizeof s->msg, "%s", msg);
  jpeg_abort_decompress(&s->impl->cinfo);
  forget_input(s->impl);
  return -1;
}

int gd_jpeg_header(gd_jpeg *s, const unsigned char *data, size_t len) {
  gd_jpeg_impl *m = s->impl;
  j_decompress_ptr ci = &m->cinfo;
  begin(s);
  if (setjmp(m->err.jb)) {
    return fail_libjpeg(s);
  }
  jpeg_mem_src(ci, data, (unsigned long)len);
  if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK) {
    return fail_plain(s, "no image in the JPEG data (tables only)");
  }
  s->hdr.width = ci->image_width;
  s->hdr.height = ci->image_height;
  s->hdr.components = ci->num_components;
  s->hdr.color_space = (int)ci->jpeg_color_space;
  s->hdr.progressive = ci->progressive_mode ? 1 : 0;
  s->hdr.arithmetic = ci->arith_code ? 1 : 0;
  s->hdr.precision = ci->data_precision;
  /* What jdcoefct.c allocates for a multi-scan image: every component's blocks, padded
   * to whole iMCUs, 64 16-bit coefficients each. */
  unsigned long long coef = 0, blocks = 0;
  for (int i = 0; i < ci->num_components; i++) {
    const jpeg_component_info *c = &ci->comp_info[i];
    unsigned long long bw = c->width_in_blocks, bh = c->height_in_blocks;
    blocks += bw * bh;
    bw = (bw + (unsigned)c->h_samp_factor - 1) / (unsigned)c->h_samp_factor * (unsigned)c->h_samp_factor;
    bh = (bh + (unsigned)c->v_samp_factor - 1) / (unsigned)c->v_samp_factor * (unsigned)c->v_samp_factor;
    coef += bw * bh * (unsigned long long)sizeof(JBLOCK);
  }
  s->hdr.coef_bytes = coef;
  s->hdr.blocks = blocks;
  jpeg_abort_decompress(ci);
  forget_input(m);
  return 0;
}

static int pf_channels(int pf) {
  switch (pf) {
  case GD_PF_GRAY:
    return 1;
  case GD_PF_RGB:
  case GD_PF_BGR:
    return 3;
  default:
    return 4;
  }
}

/* luma is the ITU-R 601 luma of r, g, b by rule (GD_RULE_*): PIL's convert("L") (16-bit
 * fixed point, rounded), OpenCV's cvtColor (14-bit, rounded: DALI's BMP, PNM and TIFF),
 * libpng's rgb_to_gray with nvImageCodec's weights (15-bit, truncated: DALI's PNG), or
 * truncated in double precision (DALI's CMYK JPEGs). */
static inline unsigned char luma(unsigned r, unsigned g, unsigned b, int rule) {
  switch (rule) {
  case GD_RULE_OPENCV:
    return (unsigned char)((r * 4899u + g * 9617u + b * 1868u + 8192u) >> 14);
  case GD_RULE_LIBPNG:
    return (unsigned char)((r * 9797u + g * 19234u + b * 3737u) >> 15);
  case GD_RULE_DALI_JPEG:
    return (unsigned char)(0.299 * r + 0.587 * g + 0.114 * b);
  }
  return (unsigned char)((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

/* cmyk_channel is PIL's CMYK -> RGB for one channel: (255 - k) - c * (255 - k) / 255,
 * with PIL's rounded division by 255; with GD_RULE_DALI_JPEG DALI's (255 - c) * (255 - k)
 * / 255, truncated. */
static inline unsigned char cmyk_channel(unsigned c, unsigned nk, int rule) {
  if (rule == GD_RULE_DALI_JPEG) {
    return (unsigned char)((255u - c) * nk / 255u);
  }
  unsigned t = c * nk + 128;
  t = ((t >> 8) + t) >> 8;
  return (unsigned char)(nk - t);
}

/* emit_row writes n pixels of layout pf from s to d, one output pixel every step bytes. */
static void emit_row(const unsigned char *s, int pf, unsigned n, unsigned char *d,
                     ptrdiff_t step, int out, int rule) {
  int oc = out == GD_OUT_GRAY ? 1 : 3;
  if (step == oc && ((pf == GD_PF_GRAY && out == GD_OUT_GRAY) ||
                     (pf == GD_PF_RGB && out == GD_OUT_RGB) ||
                     (pf == GD_PF_BGR && out == GD_OUT_BGR))) {
    memcpy(d, s, (size_t)n * (size_t)oc);
    return;
  }
  int ic = pf_channels(pf);
  for (unsigned i = 0; i < n; i++, s += ic, d += step) {
    unsigned r, g, b;
    switch (pf) {
    case GD_PF_GRAY:
      if (out == GD_OUT_GRAY) {
        d[0] = s[0];
        continue;
      }
      r = g = b = s[0];
      break;
    case GD_PF_BGR:
      r = s[2];
      g = s[1];
      b = s[0];
      break;
    case GD_PF_CMYK: {
      unsigned nk = 255u - s[3];
      r = cmyk_channel(s[0], nk, rule);
      g = cmyk_channel(s[1], nk, rule);
      b = cmyk_channel(s[2], nk, rule);
      break;
    }
    case GD_PF_CMYK_INV: {
      unsigned nk = s[3];
      r = cmyk_channel(255u - s[0], nk, rule);
      g = cmyk_channel(255u - s[1], nk, rule);
      b = cmyk_channel(255u - s[2], nk, rule);
      break;
    }
    default: /* GD_PF_RGB, GD_PF_RGBX */
      r = s[0];
      g = s[1];
      b = s[2];
      break;
    }
    switch (out) {
    case GD_OUT_GRAY:
      d[0] = luma(r, g, b, rule);
      break;
    case GD_OUT_BGR:
      d[0] = (unsigned char)b;
      d[1] = (unsigned char)g;
      d[2] = (unsigned char)r;
      break;
    default:
      d[0] = (unsigned char)r;
      d[1] = (unsigned char)g;
      d[2] = (unsigned char)b;
      break;
    }
  }
}

/* row_target locates where row y (0-based in the rw x rh region) lands in the oriented
 * output, whose rows are pitch pixels apart, and the pixel step along it. EXIF
 * orientation o means: the stored image must be flipped/rotated this way to be seen
 * upright (o=6: rotate 90 degrees clockwise). */
static void row_target(int o, unsigned rw, unsigned rh, unsigned y, int oc, ptrdiff_t pitch,
                       ptrdiff_t *base, ptrdiff_t *step) {
  ptrdiff_t ow = pitch; /* the oriented region's width when it is packed */
  ptrdiff_t b, st;
  ptrdiff_t W = rw, H = rh, Y = y;
  switch (o) {
  case 2:
    b = Y * ow + W - 1;
    st = -1;
    break;
  case 3:
    b = (H - 1 - Y) * ow + W - 1;
    st = -1;
    break;
  case 4:
    b = (H - 1 - Y) * ow;
    st = 1;
    break;
  case 5:
    b = Y;
    st = ow;
    break;
  case 6:
    b = H - 1 - Y;
    st = ow;
    break;
  case 7:
    b = (W - 1) * ow + H - 1 - Y;
    st = -ow;
    break;
  case 8:
    b = (W - 1) * ow + Y;
    st = -ow;
    break;
  default:
    b = Y * ow;
    st = 1;
    break;
  }
  *base = b * oc;
  *step = st * oc;
}

void gd_emit(const unsigned char *src, size_t stride, int pf, unsigned rx, unsigned ry,
             unsigned rw, unsigned rh, int orientation, int out, int rule,
             unsigned char *dst) {
  int oc = out == GD_OUT_GRAY ? 1 : 3;
  size_t ic = (size_t)pf_channels(pf);
  for (unsigned y = 0; y < rh; y++) {
    ptrdiff_t base, step;
    row_target(orientation, rw, rh, y, oc, orientation >= 5 ? (ptrdiff_t)rh : (ptrdiff_t)rw, &base,
               &step);
    emit_row(src + (size_t)(ry + y) * stride + (size_t)rx * ic, pf, rw, dst + base, step, out,
             rule);
  }
}

/* imcu_width is the width in output pixels of one iMCU column at the chosen scale. */
static unsigned imcu_width(j_decompress_ptr ci) {
#if JPEG_LIB_VERSION >= 70
  return (unsigned)(ci->max_h_samp_factor * ci->min_DCT_h_scaled_size);
#else
  return (unsigned)(ci->max_h_samp_factor * ci->min_DCT_scaled_size);
#endif
}

int gd_jpeg_decode(gd_jpeg *s, const unsigned char *data, size_t len, unsigned char *dst,
                   size_t dst_len) {
  gd_jpeg_impl *m = s->impl;
  j_decompress_ptr ci = &m->cinfo;
  const gd_job *job = &s->job;
  begin(s);
  if (setjmp(m->err.jb)) {
    return fail_libjpeg(s);
  }
  jpeg_mem_src(ci, data, (unsigned long)len);
  if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK) {
    return fail_plain(s, "no image in the JPEG data (tables only)");
  }
  if (ci->image_width != job->image_w || ci->image_height != job->image_h) {
    return fail_plain(s, "header does not match the Info it was decoded with");
  }
  if (job->max_pixels > 0 &&
      (long long)ci->image_width * (long long)ci->image_height > job->max_pixels) {
    return fail_plain(s, "image exceeds max_image_pixels");
  }

  int out = job->out;
  int pf;
  switch (ci->jpeg_color_space) {
  case JCS_GRAYSCALE:
    if (out == GD_OUT_GRAY) {
      ci->out_color_space = JCS_GRAYSCALE;
      pf = GD_PF_GRAY;
    } else if (out == GD_OUT_BGR) {
      ci->out_color_space = JCS_EXT_BGR;
      pf = GD_PF_BGR;
    } else {
      ci->out_color_space = JCS_RGB;
      pf = GD_PF_RGB;
    }
    break;
  case JCS_CMYK:
  case JCS_YCCK:
    /* libjpeg turns YCCK into CMYK; both come out Adobe-inverted, as PIL assumes. */
    ci->out_color_space = JCS_CMYK;
    pf = GD_PF_CMYK_INV;
    break;
  default:
    if (out == GD_OUT_BGR) {
      ci->out_color_space = JCS_EXT_BGR;
      pf = GD_PF_BGR;
    } else if (out == GD_OUT_GRAY && job->rule == GD_RULE_DALI_JPEG) {
      /* libjpeg's own: the Y channel as stored (no chroma, no RGB round trip) */
      ci->out_color_space = JCS_GRAYSCALE;
      pf = GD_PF_GRAY;
    } else {
      ci->out_color_space = JCS_RGB;
      pf = GD_PF_RGB;
    }
    break;
  }
  ci->dct_method = job->fast_idct ? JDCT_IFAST : JDCT_ISLOW;
  ci->do_fancy_upsampling = TRUE;
  ci->scale_num = (unsigned)job->scale_num;
  ci->scale_denom = 8;
  /* Bounds the whole-image buffers libjpeg sizes in jpeg_start_decompress (coefficients
   * of multi-scan images): with no backing store, a larger need fails before it is
   * allocated. */
  ci->mem->max_memory_to_use = job->max_memory > 0 ? (long)job->max_memory : 0;

  jpeg_start_decompress(ci);
  if (ci->output_width != job->scaled_w || ci->output_height != job->scaled_h) {
    return fail_plain(s, "libjpeg scaled the image to an unexpected size");
  }
  if (ci->output_components != pf_channels(pf)) {
    return fail_plain(s, "libjpeg returned an unexpected number of components");
  }
  if (job->rw == 0 || job->rh == 0 || job->rx + job->rw > ci->output_width ||
      job->ry + job->rh > ci->output_height) {
    return fail_plain(s, "region outside the image");
  }
  int oc = out == GD_OUT_GRAY ? 1 : 3;
  /* The oriented region and where it lands in dst. */
  unsigned ow = job->orientation >= 5 ? job->rh : job->rw;
  unsigned oh = job->orientation >= 5 ? job->rw : job->rh;
  if (job->dst_x + ow > job->dst_pitch ||
      dst_len < ((size_t)(job->dst_y + oh) * job->dst_pitch) * (size_t)oc) {
    return fail_plain(s, "destination buffer too small");
  }
  unsigned char *origin = dst + ((size_t)job->dst_y * job->dst_pitch + job->dst_x) * (size_t)oc;
  size_t pitch = (size_t)job->dst_pitch * (size_t)oc;

  /* Crop columns. Fancy upsampling and block smoothing treat the crop's edges as image
   * edges, so widen the request on each side to keep the wanted columns identical to
   * those of a full decode, then copy just those. Fancy upsampling reads one chroma
   * sample beside each, at most max_h_samp_factor output pixels wide: two of those
   * suffice. Block smoothing (progressive files) reaches further: it takes the DC
   * values of the two blocks on each side (libjpeg-turbo 2.1's 5x5 neighbourhood; one
   * in older ones), and treats the first decoded block column as the image's edge, so
   * the chroma sample beside the region needs two blocks of its own beyond: three
   * iMCUs (two fall short on 4:2:0; TestROIEqualsFullWindow). */
  JDIMENSION xoff = 0, cw = ci->output_width;
  if (job->rw < ci->output_width) {
    unsigned margin =
        ci->progressive_mode ? 3u * imcu_width(ci) : 2u * (unsigned)ci->max_h_samp_factor;
    unsigned x0 = job->rx > margin ? job->rx - margin : 0;
    unsigned x1 = job->rx + job->rw + margin;
    if (x1 > ci->output_width) {
      x1 = ci->output_width;
    }
    if (x0 > 0 || x1 < ci->output_width) {
      xoff = x0;
      cw = x1 - x0;
      jpeg_crop_scanline(ci, &xoff, &cw);
    }
  }
  if (xoff > job->rx || xoff + cw < job->rx + job->rw) {
    return fail_plain(s, "libjpeg cropped away part of the region");
  }
  if (job->ry > 0) {
    JDIMENSION skipped = jpeg_skip_scanlines(ci, job->ry);
    if (skipped != job->ry) {
      return fail_plain(s, "could not skip to the region's first row");
    }
  }

  const unsigned end = job->ry + job->rh;
  int identity = (pf == GD_PF_GRAY && out == GD_OUT_GRAY) ||
                 (pf == GD_PF_RGB && out == GD_OUT_RGB) ||
                 (pf == GD_PF_BGR && out == GD_OUT_BGR);
  if (identity && job->orientation == 1 && xoff == job->rx && cw == job->rw) {
    /* Straight into dst: no conversion, no column copy, no reordering. */
    while (ci->output_scanline < end) {
      JSAMPROW rows[GD_ROW_BLOCK];
      unsigned y = ci->output_scanline - job->ry;
      unsigned n = end - ci->output_scanline;
      if (n > GD_ROW_BLOCK) {
        n = GD_ROW_BLOCK;
      }
      for (unsigned i = 0; i < n; i++) {
        rows[i] = origin + (size_t)(y + i) * pitch;
      }
      if (jpeg_read_scanlines(ci, rows, n) == 0) {
        return fail_plain(s, "libjpeg returned no rows");
      }
    }
  } else {
    size_t in_row = (size_t)cw * (size_t)ci->output_components;
    if (!grow_rows(m, in_row * GD_ROW_BLOCK)) {
      return fail_plain(s, "out of memory for JPEG row buffer");
    }
    size_t col = (size_t)(job->rx - xoff) * (size_t)ci->output_components;
    while (ci->output_scanline < end) {
      JSAMPROW rows[GD_ROW_BLOCK];
      unsigned y = ci->output_scanline - job->ry;
      unsigned n = end - ci->output_scanline;
      if (n > GD_ROW_BLOCK) {
        n = GD_ROW_BLOCK;
      }
      for (unsigned i = 0; i < n; i++) {
        rows[i] = m->rows + (size_t)i * in_row;
      }
      JDIMENSION got = jpeg_read_scanlines(ci, rows, n);
      if (got == 0) {
        return fail_plain(s, "libjpeg returned no rows");
      }
      for (unsigned i = 0; i < got; i++) {
        ptrdiff_t base, step;
        row_target(job->orientation, job->rw, job->rh, y + i, oc, (ptrdiff_t)job->dst_pitch, &base,
                   &step);
        emit_row(rows[i] + col, pf, job->rw, origin + base, step, out, job->rule);
      }
    }
  }

  /* The rows below the region. The only thing a full decode could still do there is
   * fail: data cut short (JWRN_JPEG_EOF, the error PIL raises); corrupt entropy data
   * only warns, and warnings are tolerated. A single-scan file whose EOI marker is
   * still ahead in the data cannot run out before it: stop here without decoding the
   * rest (this is most of a random crop's saving). Otherwise the rows are entropy-
   * decoded and dropped (no IDCT but for the last row) and the data read on to EOI,
   * so that a file cut short below the region fails as a full decode does. A
   * progressive (multi-scan) file's scans are all read already by
   * jpeg_start_decompress: skipping its rows costs nothing. */
  if (ci->output_scanline < ci->output_height && !jpeg_has_multiple_scans(ci) &&
      eoi_ahead(ci)) {
    jpeg_abort_decompress(ci);
    forget_input(m);
    return 0;
  }
  if (ci->output_scanline < ci->output_height) {
    JDIMENSION left = ci->output_height - ci->output_scanline;
    if (left > 1 && jpeg_skip_scanlines(ci, left - 1) != left - 1) {
      return fail_plain(s, "could not skip to the last row");
    }
    if (!grow_rows(m, (size_t)cw * (size_t)ci->output_components)) {
      return fail_plain(s, "out of memory for JPEG row buffer");
    }
    JSAMPROW last = m->rows;
    if (jpeg_read_scanlines(ci, &last, 1) != 1) {
      return fail_plain(s, "libjpeg returned no rows");
    }
  }

  /* Reading on to EOI after the last row catches files cut short right after their
   * entropy data (PIL fails those too). */
  jpeg_finish_decompress(ci);
  forget_input(m);
  return 0;
}
