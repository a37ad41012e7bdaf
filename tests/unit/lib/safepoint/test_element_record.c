/* lib/safepoint/element_record.c and the element iterator's reuse of it
 * (profile2_iterator_skip_reused over queue elements): which bottom of an
 * element is the record's, and where its frames sit among those the
 * record's element yielded. No JVM: interpreted frames without a captured
 * identity and native frames decode from the capture alone; a compiled
 * frame's code cannot be found, so it never decodes as recorded. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "safepoint/element_iter.h"
#include "safepoint/element_record.h"

#define MAXF 16

/* An element of n interpreted frames whose methods are ids[0..n) (youngest
 * first); each frame's sp says how deep it is (the bottom frame has the
 * highest), so equal ids at equal depths are equal frames. */
static struct p2_capture *element(const int *ids, int n) {
  struct p2_capture *c = calloc(1, p2_capture_size(MAXF, 0));
  c->kind = ASGST_JAVA_TRACE;
  c->end = 0;
  c->nframes = (int16_t)n;
  for (int i = 0; i < n; i++) {
    struct p2_cframe *f = &c->frames[i];
    int depth = n - i;
    f->kind = P2_PHYS_INTERPRETED;
    f->method = (const void *)(uintptr_t)(0x1000 * ids[i]);
    f->code = (const void *)(uintptr_t)(0x100000 + 16 * ids[i]); /* the bcp */
    f->sp = (const char *)(uintptr_t)(0x7f0000 - 64 * depth);
    f->fp = f->sp + 32;
    f->pc = (const char *)0x5000;
    f->bci = ids[i];
  }
  return c;
}

static void out_each(uint32_t *out, int n) {
  for (int i = 0; i <= n; i++) out[i] = (uint32_t)i;
}

Test(element_record, an_empty_record_reuses_nothing) {
  struct p2_element_record *r = p2_element_record_create();
  int ids[] = {1, 2, 3};
  struct p2_capture *c = element(ids, 3);
  cr_assert_eq(p2_element_record_reusable_from(r, c), 3);
  free(c);
  p2_element_record_destroy(r);
}

Test(element_record, the_equal_bottom_is_reusable_whatever_the_depths) {
  struct p2_element_record *r = p2_element_record_create();
  int a[] = {1, 2, 3, 4, 5};
  struct p2_capture *ca = element(a, 5);
  uint32_t out[MAXF + 1];
  out_each(out, 5);
  uint64_t gen = p2_element_record_store(r, ca, out);
  cr_assert(gen & (1ull << 63), "record generations never meet a walk cache's");
  /* the same bottom three, a new top */
  int b[] = {9, 8, 3, 4, 5};
  struct p2_capture *cb = element(b, 5);
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 2);
  /* deeper: the whole record under two new frames */
  int d[] = {7, 6, 1, 2, 3, 4, 5};
  struct p2_capture *cd = element(d, 7);
  cr_assert_eq(p2_element_record_reusable_from(r, cd), 2);
  /* shallower: returned into the record's bottom frames */
  int s[] = {3, 4, 5};
  struct p2_capture *cs = element(s, 3);
  cr_assert_eq(p2_element_record_reusable_from(r, cs), 0);
  /* the same methods one frame deeper: other activations, nothing */
  int o[] = {1, 2, 3, 4, 5, 6};
  struct p2_capture *co = element(o, 6);
  cr_assert_eq(p2_element_record_reusable_from(r, co), 6);
  free(ca), free(cb), free(cd), free(cs), free(co);
  p2_element_record_destroy(r);
}

Test(element_record, a_frame_that_moved_on_ends_the_reusable_part) {
  struct p2_element_record *r = p2_element_record_create();
  int a[] = {1, 2, 3, 4};
  struct p2_capture *ca = element(a, 4);
  uint32_t out[MAXF + 1];
  out_each(out, 4);
  p2_element_record_store(r, ca, out);
  struct p2_capture *cb = element(a, 4);
  cb->frames[2].code = (const char *)cb->frames[2].code + 3; /* frame 2's bcp moved */
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 3);
  /* a captured identity differs: the decoding would check it, so it counts */
  struct p2_capture *cc = element(a, 4);
  cc->frames[3].idnum = 7;
  cr_assert_eq(p2_element_record_reusable_from(r, cc), 4);
  free(ca), free(cb), free(cc);
  p2_element_record_destroy(r);
}

Test(element_record, code_that_cannot_be_found_again_is_not_reused) {
  struct p2_element_record *r = p2_element_record_create();
  int a[] = {1, 2, 3, 4};
  struct p2_capture *ca = element(a, 4);
  ca->frames[1].kind = P2_PHYS_COMPILED; /* no code cache here: its nmethod is not found */
  uint32_t out[MAXF + 1];
  out_each(out, 4);
  p2_element_record_store(r, ca, out);
  struct p2_capture *cb = element(a, 4);
  cb->frames[1].kind = P2_PHYS_COMPILED;
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 2, "only the frames below it");
  free(ca), free(cb);
  p2_element_record_destroy(r);
}

Test(element_record, another_kind_an_unfinished_capture_or_an_unload_reuses_nothing) {
  struct p2_element_record *r = p2_element_record_create();
  int a[] = {1, 2, 3};
  struct p2_capture *ca = element(a, 3);
  uint32_t out[MAXF + 1];
  out_each(out, 3);
  p2_element_record_store(r, ca, out);
  struct p2_capture *cb = element(a, 3);
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 0);
  cb->kind = ASGST_JAVA_TRACE + 1;
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 3);
  cb->kind = ASGST_JAVA_TRACE;
  cb->end = 1;
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 3);
  cb->end = 0;
  cb->unload_gen = 5; /* captured under another unload generation than now */
  cr_assert_eq(p2_element_record_reusable_from(r, cb), 3);
  free(ca), free(cb);
  p2_element_record_destroy(r);
}

/* The iterator: the handler skips the record's frames, and the element it
 * took so becomes the record, with the positions of the skipped frames
 * carried over; a chain of such elements keeps skipping. */
static int yield_upto(ASGST_Iterator *it, int n, ASGST_Method *got) {
  ASGST_Frame f;
  int k = 0;
  while (k < n && p2_element_iter_next(it, &f) == 1) got[k++] = f.method;
  return k;
}

Test(element_record, elements_skip_the_record_s_frames_and_become_the_record) {
  struct p2_element_record *r = p2_element_record_create();
  ASGST_Iterator it;
  ASGST_Method got[MAXF];
  ASGST_Frame f;
  int from, count;

  int a[] = {1, 2, 3, 4, 5};
  struct p2_capture *ca = element(a, 5);
  p2_element_iter_init(&it, ca, 5, NULL, 0, 0);
  p2_element_iter_offer_record(&it, r);
  cr_assert_eq(p2_element_iter_skip_reused(&it, 12345, &from, &count), 0, "nothing recorded yet");
  cr_assert_eq(yield_upto(&it, MAXF, got), 5);
  uint64_t gen_a = p2_element_iter_recorded(&it);
  cr_assert_neq(gen_a, 0);
  cr_assert_eq(p2_element_iter_next(&it, &f), 0, "the end, again");
  cr_assert_eq(p2_element_iter_recorded(&it), gen_a, "recorded once");

  int b[] = {9, 8, 3, 4, 5};
  struct p2_capture *cb = element(b, 5);
  p2_element_iter_init(&it, cb, 5, NULL, 0, 0);
  p2_element_iter_offer_record(&it, r);
  cr_assert_eq(p2_element_iter_skip_reused(&it, gen_a, &from, &count), 0, "the top frame is new");
  cr_assert_eq(yield_upto(&it, 1, got), 1);
  cr_assert_eq(p2_element_iter_skip_reused(&it, gen_a + 1, &from, &count), 0, "another generation");
  cr_assert_eq(p2_element_iter_skip_reused(&it, gen_a, &from, &count), 0, "frame 1 is new");
  cr_assert_eq(yield_upto(&it, 1, got), 1);
  cr_assert_eq(p2_element_iter_skip_reused(&it, gen_a, &from, &count), 1);
  cr_assert_eq(from, 2);
  cr_assert_eq(count, 3);
  cr_assert_eq(p2_element_iter_next(&it, &f), 0);
  uint64_t gen_b = p2_element_iter_recorded(&it);
  cr_assert(gen_b != 0 && gen_b != gen_a);

  /* one new frame over b's frames 1.. (8, 3, 4, 5): skips 4 from index 1 */
  int c[] = {6, 8, 3, 4, 5};
  struct p2_capture *cc = element(c, 5);
  p2_element_iter_init(&it, cc, 5, NULL, 0, 0);
  p2_element_iter_offer_record(&it, r);
  cr_assert_eq(yield_upto(&it, 1, got), 1);
  cr_assert_eq(p2_element_iter_skip_reused(&it, gen_b, &from, &count), 1);
  cr_assert_eq(from, 1);
  cr_assert_eq(count, 4);
  cr_assert_eq(p2_element_iter_next(&it, &f), 0);
  /* rewound, the element yields every frame, as a full walk would */
  p2_element_iter_rewind(&it);
  cr_assert_eq(yield_upto(&it, MAXF, got), 5);
  for (int i = 0; i < 5; i++) cr_assert_eq((uintptr_t)got[i], (uintptr_t)(0x1000 * c[i]));
  cr_assert_neq(p2_element_iter_recorded(&it), gen_b);
  free(ca), free(cb), free(cc);
  p2_element_record_destroy(r);
}

Test(element_record, an_element_cut_short_is_not_recorded) {
  struct p2_element_record *r = p2_element_record_create();
  ASGST_Iterator it;
  ASGST_Method got[MAXF];
  int a[] = {1, 2, 3};
  struct p2_capture *ca = element(a, 3);
  p2_element_iter_init(&it, ca, 3, NULL, 0, 0);
  p2_element_iter_offer_record(&it, r);
  cr_assert_eq(yield_upto(&it, 2, got), 2);
  cr_assert_eq(p2_element_iter_recorded(&it), 0);
  cr_assert_eq(r->gen, 0);
  /* not whole (its capture stopped above the stack's end): never offered */
  struct p2_capture *cb = element(a, 3);
  cb->end = 1;
  p2_element_iter_init(&it, cb, 3, NULL, 0, PROFILE2_STALE_ELEMENT);
  p2_element_iter_offer_record(&it, r);
  cr_assert_null(it.rec);
  free(ca), free(cb);
  p2_element_record_destroy(r);
}
