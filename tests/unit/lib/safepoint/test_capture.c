/* lib/safepoint/capture.c's p2_capture_same: the equality that exact
 * compression (profile2_enqueue_or_match) relies on. Every recorded field
 * of every frame counts; the capture time and the unload generation do
 * not; padding the capture never writes does not either. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "safepoint/capture.h"

#define FRAMES 4

static struct p2_capture *make(unsigned char fill) {
  struct p2_capture *c = malloc(p2_capture_size(FRAMES, 0));
  /* different garbage in each: padding must not matter */
  memset(c, fill, p2_capture_size(FRAMES, 0));
  c->kind = ASGST_JAVA_TRACE;
  c->end = 1;
  c->nframes = FRAMES;
  c->first_java = 0;
  c->has_below = false;
  for (int i = 0; i < FRAMES; i++) {
    struct p2_cframe *f = &c->frames[i];
    f->pc = (const char *)0x1000 + i;
    f->sp = (const char *)0x2000 + i;
    f->fp = (const char *)0x3000 + i;
    f->method = (const void *)(uintptr_t)(0x4000 + i);
    f->code = (const void *)(uintptr_t)(0x5000 + i);
    f->debug_pc = (const char *)0x6000 + i;
    f->compile_id = i;
    f->bci = 10 + i;
    f->kind = 1;
    f->comp_level = 4;
    f->exact = true;
    f->match = 0;
  }
  return c;
}

Test(capture, equal_frames_are_the_same_whatever_the_padding_time_and_generation) {
  struct p2_capture *a = make(0x00), *b = make(0xff);
  a->time_ns = 1, b->time_ns = 2;
  a->unload_gen = 3, b->unload_gen = 4;
  cr_assert(p2_capture_same(a, b));
  free(a), free(b);
}

/* The frame below the capture (capture.h) counts when there is one: two
 * captures of the same K frames over different callers are different
 * stacks. */
Test(capture, the_frame_below_counts) {
  struct p2_capture *a = make(0), *b = make(0xff);
  a->has_below = b->has_below = true;
  memset(&a->below, 0, sizeof a->below);
  memset(&b->below, 0xff, sizeof b->below);
  a->below = b->below = a->frames[FRAMES - 1];
  a->below.sp = b->below.sp = (const char *)0x2100;
  cr_assert(p2_capture_same(a, b));
  b->below.pc++;
  cr_assert(!p2_capture_same(a, b));
  b->below.pc--;
  b->has_below = false;
  cr_assert(!p2_capture_same(a, b));
  free(a), free(b);
}

Test(capture, any_field_of_any_frame_makes_a_difference) {
  for (int i = 0; i < FRAMES; i++) {
    for (int field = 0; field < 11; field++) {
      struct p2_capture *a = make(0), *b = make(0);
      struct p2_cframe *f = &b->frames[i];
      switch (field) {
      case 0:
        f->pc++;
        break;
      case 1:
        f->sp++;
        break;
      case 2:
        f->fp++;
        break;
      case 3:
        f->method = (const char *)f->method + 1;
        break;
      case 4:
        f->code = (const char *)f->code + 1;
        break; /* an interpreted frame's bcp: another bci */
      case 5:
        f->debug_pc++;
        break;
      case 6:
        f->compile_id++;
        break;
      case 7:
        f->bci++;
        break;
      case 8:
        f->kind++;
        break;
      case 9:
        f->comp_level--;
        break;
      case 10:
        f->exact = false;
        break;
      }
      cr_assert_not(p2_capture_same(a, b), "frame %d, field %d", i, field);
      free(a), free(b);
    }
  }
}

Test(capture, frame_count_end_kind_and_first_java_frame_count) {
  struct p2_capture *a = make(0), *b = make(0);
  b->nframes = FRAMES - 1; /* a shorter stack, the common prefix equal */
  cr_assert_not(p2_capture_same(a, b));
  b->nframes = FRAMES, b->end = 0;
  cr_assert_not(p2_capture_same(a, b));
  b->end = 1, b->first_java = 1; /* one more native frame above the Java ones */
  cr_assert_not(p2_capture_same(a, b));
  b->first_java = 0, b->kind = 2;
  cr_assert_not(p2_capture_same(a, b));
  free(a), free(b);
}
