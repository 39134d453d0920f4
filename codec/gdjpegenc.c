#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#include "gdjpegenc.h"

struct gd_encerr {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
};

struct gd_jpegenc {
  struct jpeg_compress_struct c;
  struct jpeg_decompress_struct d;
  struct gd_encerr cerr, derr;
  struct jpeg_destination_mgr dest;
  int c_created, d_created;
  unsigned char *buf; /* encoded bytes, grow-only */
  size_t cap, len;
  int grow_failed;
};

static void enc_error_exit(j_common_ptr c) { longjmp(((struct gd_encerr *)c->err)->jb, 1); }
static void enc_output_message(j_common_ptr c) { (void)c; }

/* Destination manager: the encoder writes into s->buf, doubled when full. */
static void dest_init(j_compress_ptr c) {
  gd_jpegenc *s = (gd_jpegenc *)c->client_data;
  s->dest.next_output_byte = s->buf;
  s->dest.free_in_buffer = s->cap;
}

static boolean dest_empty(j_compress_ptr c) {
  gd_jpegenc *s = (gd_jpegenc *)c->client_data;
  size_t ncap = s->cap * 2;
  unsigned char *nb = realloc(s->buf, ncap);
  if (nb == NULL) {
    s->grow_failed = 1;
    ERREXIT(c, JERR_OUT_OF_MEMORY);
  }
  /* libjpeg calls this only with the whole buffer used. */
  s->dest.next_output_byte = nb + s->cap;
  s->dest.free_in_buffer = ncap - s->cap;
  s->buf = nb;
  s->cap = ncap;
  return TRUE;
}

static void dest_term(j_compress_ptr c) {
  gd_jpegenc *s = (gd_jpegenc *)c->client_data;
  s->len = s->cap - s->dest.free_in_buffer;
}

gd_jpegenc *gd_jpegenc_new(void) {
  gd_jpegenc *s = calloc(1, sizeof *s);
  if (s == NULL) {
    return NULL;
  }
  s->cap = 1 << 16;
  s->buf = malloc(s->cap);
  if (s->buf == NULL) {
    free(s);
    return NULL;
  }
  s->c.err = jpeg_std_error(&s->cerr.pub);
  s->cerr.pub.error_exit = enc_error_exit;
  s->cerr.pub.output_message = enc_output_message;
  s->d.err = jpeg_std_error(&s->derr.pub);
  s->derr.pub.error_exit = enc_error_exit;
  s->derr.pub.output_message = enc_output_message;
  if (setjmp(s->cerr.jb)) {
    gd_jpegenc_free(s);
    return NULL;
  }
  jpeg_create_compress(&s->c);
  s->c_created = 1;
  if (setjmp(s->derr.jb)) {
    gd_jpegenc_free(s);
    return NULL;
  }
  jpeg_create_decompress(&s->d);
  s->d_created = 1;
  s->c.client_data = s;
  s->dest.init_destination = dest_init;
  s->dest.empty_output_buffer = dest_empty;
  s->dest.term_destination = dest_term;
  s->c.dest = &s->dest;
  return s;
}

void gd_jpegenc_free(gd_jpegenc *s) {
  if (s == NULL) {
    return;
  }
  if (s->c_created) {
    jpeg_destroy_compress(&s->c);
  }
  if (s->d_created) {
    jpeg_destroy_decompress(&s->d);
  }
  free(s->buf);
  free(s);
}

size_t gd_jpegenc_encoded_size(const gd_jpegenc *s) { return s->len; }

static void set_msg(j_common_ptr c, char *msg, size_t msg_len) {
  char b[JMSG_LENGTH_MAX];
  c->err->format_message(c, b);
  snprintf(msg, msg_len, "%s", b);
}

int gd_jpegenc_roundtrip(gd_jpegenc *s, const unsigned char *src, unsigned w, unsigned h,
                         int quality, unsigned char *dst, char *msg, size_t msg_len) {
  struct jpeg_compress_struct *c = &s->c;
  struct jpeg_decompress_struct *d = &s->d;
  JSAMPROW row;
  s->len = 0;
  if (setjmp(s->cerr.jb)) {
    set_msg((j_common_ptr)c, msg, msg_len);
    jpeg_abort_compress(c);
    return -1;
  }
  c->image_width = w;
  c->image_height = h;
  c->input_components = 3;
  c->in_color_space = JCS_RGB;
  jpeg_set_defaults(c); /* YCbCr, 4:2:0, islow DCT, Huffman tables not optimized */
  jpeg_set_quality(c, quality, TRUE);
  jpeg_start_compress(c, TRUE);
  while (c->next_scanline < c->image_height) {
    row = (JSAMPROW)(src + (size_t)c->next_scanline * w * 3);
    jpeg_write_scanlines(c, &row, 1);
  }
  jpeg_finish_compress(c);

  if (setjmp(s->derr.jb)) {
    set_msg((j_common_ptr)d, msg, msg_len);
    jpeg_abort_decompress(d);
    return -1;
  }
  jpeg_mem_src(d, s->buf, (unsigned long)s->len);
  jpeg_read_header(d, TRUE);
  d->out_color_space = JCS_RGB;
  jpeg_start_decompress(d);
  if (d->output_width != w || d->output_height != h || d->output_components != 3) {
    snprintf(msg, msg_len, "decoded %ux%ux%d, expected %ux%ux3", d->output_width,
             d->output_height, d->output_components, w, h);
    jpeg_abort_decompress(d);
    return -1;
  }
  while (d->output_scanline < d->output_height) {
    row = (JSAMPROW)(dst + (size_t)d->output_scanline * w * 3);
    jpeg_read_scanlines(d, &row, 1);
  }
  jpeg_finish_decompress(d);
  return 0;
}
