#include "agent/aggregate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/methods.h"
#include "agent/sampler.h"
#include "agent/symbols_linux.h"
#include "agent/threads.h"

void p2_agg_init(struct p2_aggregator *a, struct p2_cct *cct, const struct p2_options *o, bool wall) {
  memset(a, 0, sizeof *a);
  a->cct = cct;
  a->opt = o;
  a->wall = wall;
  p2_idmap_init(&a->java_frames);
  p2_idmap_init(&a->native_frames);
  p2_idmap_init(&a->vm_frames);
  p2_idmap_init(&a->thread_frames);
  p2_idmap_init(&a->marker_frames);
  p2_idmap_init(&a->thread_index);
}

void p2_agg_destroy(struct p2_aggregator *a) {
  p2_idmap_destroy(&a->java_frames);
  p2_idmap_destroy(&a->native_frames);
  p2_idmap_destroy(&a->vm_frames);
  p2_idmap_destroy(&a->thread_frames);
  p2_idmap_destroy(&a->marker_frames);
  p2_idmap_destroy(&a->thread_index);
  free(a->threads);
  free(a->match);
  free(a->path);
  memset(a, 0, sizeof *a);
}

void p2_agg_reset(struct p2_aggregator *a, struct p2_cct *cct) {
  a->cct = cct;
  p2_idmap_clear(&a->java_frames);
  p2_idmap_clear(&a->native_frames);
  p2_idmap_clear(&a->vm_frames);
  p2_idmap_clear(&a->thread_frames);
  p2_idmap_clear(&a->marker_frames);
  if (a->match != NULL) memset(a->match, 0, a->match_cap);
}

static enum p2_frame_kind java_kind(const struct p2_rframe *f, bool tiers) {
  if (f->type == ASGST_FRAME_JAVA_NATIVE) return P2_FRAME_JAVA_NATIVE;
  if (!tiers) return P2_FRAME_JAVA;
  if (f->type == ASGST_FRAME_JAVA_INLINED) return P2_FRAME_INLINED;
  if (f->level == 0) return P2_FRAME_INTERPRETED;
  if (f->level >= 1 && f->level <= 3) return P2_FRAME_C1;
  if (f->level == 4) return P2_FRAME_C2;
  return P2_FRAME_JAVA;
}

static uint32_t java_frame(struct p2_aggregator *a, const struct p2_rframe *f) {
  enum p2_frame_kind kind = java_kind(f, a->opt->tiers);
  uint32_t slot = f->id >= P2_METHOD_NONE ? P2_METHOD_NONE : (uint32_t)f->id;
  int32_t line = a->opt->lines && slot != P2_METHOD_NONE ? p2_methods_line(slot, f->bci) : 0;
  uint64_t key = (uint64_t)slot | (uint64_t)kind << 20 | (uint64_t)(uint32_t)line << 24;
  uint32_t id;
  if (p2_idmap_get(&a->java_frames, key, &id)) return id;
  const char *name = slot == P2_METHOD_NONE ? NULL : p2_methods_name(slot);
  id = p2_cct_frame(a->cct, name != NULL ? name : "[unknown_Java]", kind, line, NULL);
  if (id != P2_CCT_NONE) p2_idmap_put(&a->java_frames, key, id);
  return id;
}

static uint32_t native_frame(struct p2_aggregator *a, uint64_t pc, bool top) {
  uint64_t key = pc << 1 | (top ? 1 : 0);
  uint32_t id;
  if (p2_idmap_get(&a->native_frames, key, &id)) return id;
  char name[512];
  const char *module;
  /* A return address points after the call: the call itself may be the
   * last instruction of a function whose successor starts right there. */
  p2_symbols_name((uintptr_t)(top ? pc : pc - 1), name, sizeof name, &module);
  id = p2_cct_frame(a->cct, name, P2_FRAME_NATIVE, 0, module);
  if (id != P2_CCT_NONE) p2_idmap_put(&a->native_frames, key, id);
  return id;
}

/* A frame in the JVM's generated code, by HotSpot's name for it (a string
 * in libjvm, see records.h): one frame per name, whatever the pc. */
static uint32_t vm_frame(struct p2_aggregator *a, uint64_t name_ptr) {
  uint32_t id;
  if (p2_idmap_get(&a->vm_frames, name_ptr, &id)) return id;
  id = p2_cct_frame(a->cct, (const char *)(uintptr_t)name_ptr, P2_FRAME_VM_CODE, 0, NULL);
  if (id != P2_CCT_NONE) p2_idmap_put(&a->vm_frames, name_ptr, id);
  return id;
}

static uint32_t marker(struct p2_aggregator *a, uint64_t key, enum p2_frame_kind kind, const char *name) {
  uint32_t id;
  if (p2_idmap_get(&a->marker_frames, key, &id)) return id;
  id = p2_cct_frame(a->cct, name, kind, 0, NULL);
  if (id != P2_CCT_NONE) p2_idmap_put(&a->marker_frames, key, id);
  return id;
}

static uint32_t thread_frame(struct p2_aggregator *a, uint32_t tid) {
  uint32_t id;
  if (p2_idmap_get(&a->thread_frames, tid, &id)) return id;
  char name[64], label[128];
  p2_threads_name_of((int)tid, name, sizeof name);
  if (name[0] == '\0') p2_threads_comm((int)tid, name, sizeof name);
  if (name[0] != '\0')
    snprintf(label, sizeof label, "[%s tid=%u]", name, tid);
  else
    snprintf(label, sizeof label, "[tid=%u]", tid);
  id = p2_cct_frame(a->cct, label, P2_FRAME_THREAD, 0, NULL);
  if (id != P2_CCT_NONE) p2_idmap_put(&a->thread_frames, tid, id);
  return id;
}

/* A virtual thread's root: its Thread.threadId(), the number Java's own
 * Thread.toString shows ("VirtualThread[#22]"). Its name is not read: the
 * handler sees only the id. Keyed apart from OS thread ids (< 2^32). */
static uint32_t vthread_frame(struct p2_aggregator *a, int64_t vthread) {
  uint64_t key = (uint64_t)1 << 63 | (uint64_t)vthread;
  uint32_t id;
  if (p2_idmap_get(&a->thread_frames, key, &id)) return id;
  char label[64];
  snprintf(label, sizeof label, "[VirtualThread #%lld]", (long long)vthread);
  id = p2_cct_frame(a->cct, label, P2_FRAME_THREAD, 0, NULL);
  if (id != P2_CCT_NONE) p2_idmap_put(&a->thread_frames, key, id);
  return id;
}

/* The per-thread entry of tid (created with its current name), or NULL
 * when out of memory. */
static struct p2_output_thread *thread_entry(struct p2_aggregator *a, uint32_t tid, const char *name) {
  uint32_t i;
  if (p2_idmap_get(&a->thread_index, tid, &i)) return &a->threads[i];
  if (a->nthreads == a->threads_cap) {
    size_t cap = a->threads_cap ? 2 * a->threads_cap : 64;
    struct p2_output_thread *t = realloc(a->threads, cap * sizeof *t);
    if (t == NULL) return NULL;
    a->threads = t;
    a->threads_cap = cap;
  }
  if (!p2_idmap_put(&a->thread_index, tid, (uint32_t)a->nthreads)) return NULL;
  struct p2_output_thread *t = &a->threads[a->nthreads++];
  memset(t, 0, sizeof *t);
  t->tid = tid;
  if (name != NULL) {
    snprintf(t->name, sizeof t->name, "%s", name);
  } else {
    p2_threads_name_of((int)tid, t->name, sizeof t->name);
    if (t->name[0] == '\0') p2_threads_comm((int)tid, t->name, sizeof t->name);
  }
  return t;
}

bool p2_agg_merge_threads(struct p2_aggregator *a, const struct p2_aggregator *src) {
  bool ok = true;
  for (size_t i = 0; i < src->nthreads; i++) {
    const struct p2_output_thread *s = &src->threads[i];
    struct p2_output_thread *t = thread_entry(a, s->tid, s->name);
    if (t == NULL) {
      ok = false;
      continue;
    }
    t->weight += s->weight;
    t->samples += s->samples;
  }
  a->filtered += src->filtered;
  a->failed += src->failed;
  a->lost_weight += src->lost_weight;
  for (int i = 0; i < P2_TIER_COUNT; i++) a->tier_weight[i] += src->tier_weight[i];
  a->unnamed_java += src->unnamed_java;
  a->unnamed_native += src->unnamed_native;
  return ok;
}

/* Names the aggregator or methods.c give frames it cannot name. */
static void count_unnamed(struct p2_aggregator *a, const uint32_t *path, size_t n) {
  bool java = false, native = false;
  for (size_t i = 0; i < n; i++) {
    const struct p2_frame_desc *f = &a->cct->frames[path[i]];
    if (f->name[0] != '[') continue;
    if (f->kind <= P2_FRAME_JAVA)
      java = java || strcmp(f->name, "[unknown_Java]") == 0 || strcmp(f->name, "[redefined_method]") == 0 ||
             strncmp(f->name, "[unknown_class].", 16) == 0;
    else if (f->kind == P2_FRAME_NATIVE)
      native = native || strcmp(f->name, "[unknown]") == 0;
  }
  a->unnamed_java += java;
  a->unnamed_native += native;
}

/* Whether a frame matches the include (2) / exclude (4) patterns. */
static uint8_t match_of(struct p2_aggregator *a, uint32_t id) {
  if (id >= a->match_cap) {
    size_t cap = a->match_cap ? a->match_cap : 4096;
    while (cap <= id) cap *= 2;
    uint8_t *m = realloc(a->match, cap);
    if (m == NULL) return 1;
    memset(m + a->match_cap, 0, cap - a->match_cap);
    a->match = m;
    a->match_cap = cap;
  }
  if (a->match[id] != 0) return a->match[id];
  const char *name = a->cct->frames[id].name;
  uint8_t v = 1;
  for (int i = 0; i < a->opt->ninclude; i++)
    if (p2_glob_match(a->opt->include[i], name)) v |= 2;
  for (int i = 0; i < a->opt->nexclude; i++)
    if (p2_glob_match(a->opt->exclude[i], name)) v |= 4;
  a->match[id] = v;
  return v;
}

static bool keep(struct p2_aggregator *a, const uint32_t *path, size_t n) {
  if (a->opt->ninclude == 0 && a->opt->nexclude == 0) return true;
  bool included = a->opt->ninclude == 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t m = match_of(a, path[i]);
    if (m & 4) return false;
    if (m & 2) included = true;
  }
  return included;
}

static enum p2_tier youngest_java_tier(const struct p2_record *r) {
  for (uint32_t i = 0; i < r->nframes; i++) {
    const struct p2_rframe *f = &r->frames[i];
    if (f->type == ASGST_FRAME_NON_JAVA) continue;
    if (f->type == ASGST_FRAME_JAVA_NATIVE) return P2_TIER_NATIVE_METHOD;
    if (f->type == ASGST_FRAME_JAVA_INLINED) return P2_TIER_INLINED;
    if (f->level == 0) return P2_TIER_INTERPRETED;
    return f->level == 4 ? P2_TIER_C2 : P2_TIER_C1;
  }
  return P2_TIER_NO_JAVA;
}

/* A thread waiting in Thread.sleep: HotSpot tells sleeping from parking only
 * in the java.lang.Thread object's status (JVMTI's SLEEPING bit); the
 * JavaThread the handler reads has the same wait state for both (JDK 17,
 * JavaThread::sleep). Its youngest Java frame does tell them apart. */
static bool sleeping_in_java(const struct p2_record *r) {
  if ((enum p2_thread_state)r->state != P2_STATE_WAITING) return false;
  for (uint32_t i = 0; i < r->nframes; i++) {
    const struct p2_rframe *f = &r->frames[i];
    if (f->type == ASGST_FRAME_NON_JAVA) continue;
    const char *name = f->id >= P2_METHOD_NONE ? NULL : p2_methods_name((uint32_t)f->id);
    /* Thread.sleep (JDK 17), sleep0 / sleepNanos / sleepNanos0 (JDK 21+) */
    return name != NULL && strncmp(name, "java/lang/Thread.sleep", 22) == 0;
  }
  return false;
}

void p2_agg_record(struct p2_aggregator *a, const struct p2_record *r) {
  size_t need = r->nframes + 4;
  if (need > a->path_cap) {
    uint32_t *p = realloc(a->path, need * sizeof *p);
    if (p == NULL) {
      a->failed++;
      return;
    }
    a->path = p;
    a->path_cap = need;
  }
  size_t n = 0;
  if (a->opt->threads) a->path[n++] = r->vthread > 0 ? vthread_frame(a, r->vthread) : thread_frame(a, r->tid);
  if (r->flags & P2_REC_LOST) {
    a->path[n++] = marker(a, 5u << 20, P2_FRAME_MARKER, "[lost]");
  } else if (r->flags & P2_REC_THROTTLED) {
    a->path[n++] = marker(a, 4u << 20, P2_FRAME_MARKER, "[throttled]");
  } else if (r->error != 0) {
    char name[128];
    snprintf(name, sizeof name, "[error:%d %s]", r->error, profile2_strerror(r->error));
    a->path[n++] = marker(a, (uint64_t)(uint16_t)r->error, P2_FRAME_MARKER, name);
  } else if (r->flags & P2_REC_STALE) {
    a->path[n++] = marker(a, 1u << 20, P2_FRAME_MARKER, "[stale]");
  } else if (r->flags & P2_REC_TRUNCATED) {
    a->path[n++] = marker(a, 2u << 20, P2_FRAME_MARKER, "[truncated]");
  }
  for (uint32_t i = r->nframes; i-- > 0;) {
    const struct p2_rframe *f = &r->frames[i];
    a->path[n++] = f->type != ASGST_FRAME_NON_JAVA  ? java_frame(a, f)
                   : (f->flags & P2_RFRAME_VM_CODE) ? vm_frame(a, f->id)
                                                    : native_frame(a, f->id, i == 0);
  }
  if (a->wall && !(r->flags & P2_REC_LOST)) {
    enum p2_thread_state s = sleeping_in_java(r) ? P2_STATE_SLEEPING : (enum p2_thread_state)r->state;
    char name[32];
    snprintf(name, sizeof name, "[%s]", p2_thread_state_name(s));
    a->path[n++] = marker(a, 3u << 20 | s, P2_FRAME_STATE, name);
  }
  for (size_t i = 0; i < n; i++)
    if (a->path[i] == P2_CCT_NONE) {
      a->failed++;
      return;
    }
  if (!keep(a, a->path, n)) {
    a->filtered++;
    return;
  }
  if (p2_cct_add(a->cct, a->path, n, r->weight, 1) == P2_CCT_NONE) {
    a->failed++;
  } else {
    a->added++;
    /* A [lost] sample has no frames: it is in no tier (not "no Java frame"). */
    if (r->flags & P2_REC_LOST)
      a->lost_weight += r->weight;
    else
      a->tier_weight[youngest_java_tier(r)] += r->weight;
    count_unnamed(a, a->path, n);
    struct p2_output_thread *t = thread_entry(a, r->tid, NULL);
    if (t != NULL) {
      t->weight += r->weight;
      t->samples++;
    }
  }
}
