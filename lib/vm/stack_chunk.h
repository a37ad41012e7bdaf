/* A virtual thread's frozen frames: the stack chunks of the continuation
 * mounted on a carrier (JDK 21+).
 *
 * HotSpot thaws a resumed virtual thread's frames a few at a time and
 * patches the return address of the oldest thawed frame to the return
 * barrier; the frames below stay in heap objects (jdk.internal.vm.
 * StackChunk) until they are returned to. A virtual thread that has
 * yielded or parked once keeps its bottom frames there until it ends. A
 * chunk's frames are laid out as on the stack, in its body: the youngest
 * at word `sp`, its pc in the word below it (freeze copies each frame with
 * its return address and saved rbp), the oldest ending at word `bottom`;
 * `parent` holds older frames frozen earlier.
 *
 * Where things are: JavaThread::_cont_entry (VMStructs) points at the
 * ContinuationEntry in enterSpecial's frame, which holds its Continuation
 * oop (_cont: its offset per JDK in vm/hotspot_versions.c); Continuation.tail and the
 * StackChunk fields by their jfieldIDs (decoded as vm/vthread_id.c decodes
 * Thread.tid, which is checked against JNI); the body starts at the
 * chunk's instance size (Klass::_layout_helper of StackChunk: its Java and
 * injected fields). The oops are raw loads: refused under ZGC (vm/gc.h).
 * Every chunk is checked before use (0 <= sp <= bottom <= size, size
 * bounded), and the walker checks every frame it finds there. */
#ifndef P2_VM_STACK_CHUNK_H
#define P2_VM_STACK_CHUNK_H

#include <jni.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/p2_compiler.h"

struct p2_stack_chunk {
  const void *oop;    /* the chunk */
  const char *body;   /* word 0 of the chunk's stack */
  int32_t sp, bottom, size; /* in words from body */
  const void *parent; /* the parent chunk's oop, or NULL */
  int32_t index;      /* in the continuation's chain: 0 the tail, 1 its parent... */
};

/* Learn the offsets (after p2_vthread_id_learn). 0, or P2_EUNSUPPORTED (no
 * continuations, ZGC, or something not found: chunks are then not read).
 * Context: Anywhere, on a Java thread (not in a signal handler). */
int p2_stack_chunk_learn(JNIEnv *env);

/* The youngest chunk of the continuation mounted on jt: 1 with *out, 0 when
 * there is none, P2_EUNSUPPORTED when chunks are not read here, P2_EFAULT
 * or P2_EINCONSISTENT for what does not check. Context: AS-Safe; jt is the
 * calling thread (its continuation cannot change under the walk). */
int p2_stack_chunk_tail(void *jt, struct p2_stack_chunk *out);

/* The chunk whose oop is oop (a parent: index is its place in the chain):
 * as p2_stack_chunk_tail. Context: AS-Safe. */
int p2_stack_chunk_at(const void *oop, int index, struct p2_stack_chunk *out);

/* Whether the continuation mounted on jt still reaches oop as its chunk
 * number index (0 the tail, 1 its parent...): what was read from that
 * chunk before this call was read from the live object. A collector moves
 * objects only with their references updated (the ContinuationEntry's
 * _cont is a root of the carrier's stack), and frees the old copy only
 * after that, so data read before a check that finds the chain unchanged
 * was not read from a freed copy. A walk checks after every frame it reads
 * in a chunk; a thread in native code or in the VM may be inside a
 * collection. Context: AS-Safe. */
bool p2_stack_chunk_still(void *jt, int index, const void *oop);

#endif
