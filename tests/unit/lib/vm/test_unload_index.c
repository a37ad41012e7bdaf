/* The class-unload index when metaspace is reused before an unload is
 * reported (lib/vm/unload_index.c): two live snapshots hold one address.
 * Lookups must answer when the two give the same answers (the same class
 * defined again in a new loader) and say "ambiguous" when they do not. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "vm/unload_index.h"

/* One allocation, as p2_unload_snapshot_build makes them: the index checks
 * that every record lies inside its snapshot. */
struct fake {
  struct p2_unload_snapshot s;
  struct p2_unloaded_method m;
  ASGST_MethodLineNumberEntry lines[2];
};

static struct fake *make(const void *klass, const void *method, const char *cls_name, const char *method_name,
                         jint line) {
  struct fake *f = calloc(1, sizeof *f);
  cr_assert_not_null(f);
  f->s.magic = P2_SNAPSHOT_LIVE;
  f->s.bytes = sizeof *f;
  f->s.cls.klass = klass;
  f->s.cls.signature = cls_name;
  f->s.cls.generic_signature = "";
  f->s.cls.idnum = (int64_t)(uintptr_t)klass;
  f->s.cls.method_count = 1;
  f->s.cls.methods = &f->m;
  f->m.method = method;
  f->m.name = method_name;
  f->m.signature = "(J)J";
  f->m.generic_signature = "";
  f->m.idnum = 3;
  f->m.line_count = 2;
  f->m.lines = f->lines;
  f->lines[0] = (ASGST_MethodLineNumberEntry){0, 10};
  f->lines[1] = (ASGST_MethodLineNumberEntry){4, line};
  return f;
}

static enum p2_unload_source class_source(const void *klass, const char **name) {
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_class *c;
  enum p2_unload_source src = p2_unload_lookup_class(klass, &c);
  *name = src == P2_UNLOAD_SNAPSHOT ? c->signature : NULL;
  p2_unload_read_end(slot);
  return src;
}

static enum p2_unload_source method_source(const void *method) {
  int slot = p2_unload_read_begin();
  const struct p2_unloaded_method *m;
  const struct p2_unloaded_class *c;
  enum p2_unload_source src = p2_unload_lookup_method(method, &m, &c);
  p2_unload_read_end(slot);
  return src;
}

static void drop(struct fake *f) {
  p2_unload_index_remove(&f->s);
  p2_unload_wait_for_readers();
  free(f);
}

Test(unload_index, same_class_defined_again_at_a_reused_address_is_named) {
  /* Separate strings with equal text: snapshots own their strings. */
  static char name_a[] = "Lgcload/Worker;", name_b[] = "Lgcload/Worker;";
  static char meth_a[] = "applyAsLong", meth_b[] = "applyAsLong";
  struct fake *a = make((void *)0x92040800, (void *)0x92041000, name_a, meth_a, 11);
  struct fake *b = make((void *)0x92040800, (void *)0x92041000, name_b, meth_b, 11);
  cr_assert_eq(p2_unload_index_add(&a->s), 0);
  cr_assert_eq(p2_unload_index_add(&b->s), 0);
  const char *name;
  cr_assert_eq(class_source((void *)0x92040800, &name), P2_UNLOAD_SNAPSHOT);
  cr_assert_str_eq(name, "Lgcload/Worker;");
  cr_assert_eq(method_source((void *)0x92041000), P2_UNLOAD_SNAPSHOT);
  drop(a);
  drop(b);
}

Test(unload_index, different_classes_at_one_address_are_ambiguous) {
  struct fake *a = make((void *)0x92050800, (void *)0x92051000, "Lgcload/Worker;", "applyAsLong", 11);
  struct fake *b = make((void *)0x92050800, (void *)0x92051000, "Lgcload/Other;", "applyAsLong", 11);
  cr_assert_eq(p2_unload_index_add(&a->s), 0);
  cr_assert_eq(p2_unload_index_add(&b->s), 0);
  const char *name;
  cr_assert_eq(class_source((void *)0x92050800, &name), P2_UNLOAD_AMBIGUOUS);
  /* the method's own answers agree, its class's do not */
  cr_assert_eq(method_source((void *)0x92051000), P2_UNLOAD_AMBIGUOUS);
  drop(a);
  drop(b);
}

Test(unload_index, methods_with_different_line_tables_are_ambiguous) {
  struct fake *a = make((void *)0x92060800, (void *)0x92061000, "Lgcload/Worker;", "applyAsLong", 11);
  struct fake *b = make((void *)0x92060800, (void *)0x92061000, "Lgcload/Worker;", "applyAsLong", 12);
  cr_assert_eq(p2_unload_index_add(&a->s), 0);
  cr_assert_eq(p2_unload_index_add(&b->s), 0);
  const char *name;
  cr_assert_eq(class_source((void *)0x92060800, &name), P2_UNLOAD_SNAPSHOT);
  cr_assert_eq(method_source((void *)0x92061000), P2_UNLOAD_AMBIGUOUS);
  drop(a);
  drop(b);
}

Test(unload_index, one_snapshot_answers_and_none_reads_the_vm) {
  struct fake *a = make((void *)0x92070800, (void *)0x92071000, "Lgcload/Worker;", "applyAsLong", 11);
  cr_assert_eq(p2_unload_index_add(&a->s), 0);
  const char *name;
  cr_assert_eq(class_source((void *)0x92070800, &name), P2_UNLOAD_SNAPSHOT);
  cr_assert_eq(method_source((void *)0x92071000), P2_UNLOAD_SNAPSHOT);
  drop(a);
  cr_assert_eq(class_source((void *)0x92070800, &name), P2_UNLOAD_VM);
}

Test(unload_index, the_class_the_vm_names_now_is_picked_of_two) {
  /* The lookup reads the live class's name from the VM (not here: these
   * addresses are no Klass, so a lookup stays ambiguous); the choice it
   * then makes: */
  struct fake *a = make((void *)0x92080800, (void *)0x92081000, "Lgcload/Worker;", "applyAsLong", 11);
  struct fake *b = make((void *)0x92080800, (void *)0x92082000, "Lgcload/Other;", "run", 11);
  struct fake *c = make((void *)0x92080800, (void *)0x92083000, "Lgcload/Worker;", "applyAsLong", 12);
  const struct p2_unloaded_class *two[] = {&a->s.cls, &b->s.cls};
  cr_assert_eq(p2_unload_pick_class(two, 2, "Lgcload/Other;"), &b->s.cls);
  cr_assert_eq(p2_unload_pick_class(two, 2, "Lgcload/Worker;"), &a->s.cls);
  cr_assert_null(p2_unload_pick_class(two, 2, "Lgcload/Third;"), "a name neither has");
  /* two of that name answering alike: either will do */
  const struct p2_unloaded_class *alike[] = {&a->s.cls, &b->s.cls, &c->s.cls};
  const struct p2_unloaded_class *p = p2_unload_pick_class(alike, 3, "Lgcload/Worker;");
  cr_assert(p == &a->s.cls || p == &c->s.cls);
  /* two of that name answering differently: not told apart */
  c->s.cls.modifiers = 0x10;
  cr_assert_null(p2_unload_pick_class(alike, 3, "Lgcload/Worker;"));
  cr_assert_eq(p2_unload_index_add(&a->s), 0);
  cr_assert_eq(p2_unload_index_add(&b->s), 0);
  const char *name;
  cr_assert_eq(class_source((void *)0x92080800, &name), P2_UNLOAD_AMBIGUOUS);
  drop(a);
  drop(b);
  free(c);
}
