/*
 * profile2.h: the ASGST profiling API, implemented on stock HotSpot JVMs.
 *
 * Copyright 2026 The profile2 authors. Licensed under the Apache License 2.0.
 *
 * The API follows the ASGST proposal (iterators over stack frames, method and
 * class information, safepoint queues, frame marks). profile2 implements it
 * from outside the VM by reading HotSpot's exported type descriptions, so a
 * profiler that includes this header and links -lprofile2 runs on an
 * unmodified JDK 17 or 25.
 *
 * Contexts. Every function states where it may be called:
 *   AS-Safe      async-signal-safe: callable from a signal handler; no
 *                allocation, no locks; every read of VM memory is
 *                fault-tolerant (a bad pointer yields an error, never a crash).
 *   Drain        callable from a queue handler (not a signal handler; may
 *                allocate, must not call JVMTI on the walked thread).
 *   Anywhere     any thread that is not in a signal handler; may allocate.
 * Unless stated otherwise, functions are thread-safe.
 *
 * Identity. ASGST_Method and ASGST_Class are HotSpot's Method* and Klass*.
 * They stay valid until their class is unloaded; register a class-unload
 * handler to learn when that happens (its methods can still be queried inside
 * the handler).
 *
 * Start-up. As on a JVM with the API built in, an agent calls nothing to
 * start it. Loaded into a JVM (-agentpath, -agentlib, jcmd JVMTI.agent_load,
 * System.loadLibrary), profile2 reads the VM's layout at once, also during
 * Agent_OnLoad, and decides ASGST_Capabilities() for the rest of the run.
 * Walks need the live phase: they return PROFILE2_NOT_INITIALIZED until
 * VMInit (profile2's own JVMTI environment gets VMInit before the agent's),
 * and work from then on, including in the agent's own VMInit callback.
 * After a dynamic attach they work at once. profile2_init() is an optional
 * shortcut (see there).
 */
#ifndef PROFILE2_H
#define PROFILE2_H

#include <stddef.h>
#include <stdint.h>
#include <jni.h>

#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PROFILE2_API __attribute__((visibility("default")))
#else
#define PROFILE2_API
#endif

/* ------------------------------------------------------------------------ */
/* Opaque handles                                                            */

struct _ASGST_Method;
typedef struct _ASGST_Method *ASGST_Method;

struct _ASGST_Class;
typedef struct _ASGST_Class *ASGST_Class;

struct _ASGST_Iterator;
typedef struct _ASGST_Iterator ASGST_Iterator;

struct _ASGST_Queue;
typedef struct _ASGST_Queue ASGST_Queue;

struct _ASGST_FrameMark;
typedef struct _ASGST_FrameMark ASGST_FrameMark;

/* ------------------------------------------------------------------------ */
/* Capabilities                                                              */

/* Optional parts of the API. The iterator and information functions are
 * always present when ASGST_Capabilities() != 0. */
enum ASGST_Capabilities {
  /* Safepoint queues (RegisterQueue, Enqueue, ...). profile2 brings threads
   * to a safe state with JVMTI SuspendThread, so it offers them when the
   * JVMTI capability can_suspend is still available (HotSpot lets only one
   * JVMTI environment hold it; a debugger's JDWP agent does). It is taken
   * at the first ASGST_RegisterQueue. */
  ASGST_REGISTER_QUEUE = 1,
  /* Frame marks: not offered on a stock JVM (docs/DESIGN.md, "Frame marks"). */
  ASGST_MARK_FRAME = 2
};

/* profile2's own capability bits (above those of the proposal). */
enum PROFILE2_Capabilities {
  /* The iterator and the method/class information functions work on this
   * JVM. Set whenever an ASGST_* bit is set. */
  PROFILE2_ITERATOR = 1 << 8,
  /* ASGST_RunWithIterator with ASGST_INCLUDE_NON_JAVA_FRAMES walks native
   * (C/C++) stacks, also in a process without a JVM (after
   * profile2_init_native()); such walks have kind ASGST_NON_JAVA_TRACE. */
  PROFILE2_NATIVE_ITERATOR = 1 << 9
};

/* Bit set of enum ASGST_Capabilities and enum PROFILE2_Capabilities.
 * On a supported JVM PROFILE2_ITERATOR is set (the iterator and information
 * functions work) and the ASGST_* bits say which optional parts are
 * available. The answer is decided once, when the library first sees the
 * JVM (during Agent_OnLoad for an agent loaded at start-up), and is the
 * same from then on. Returns 0 when profile2 cannot read the running JVM
 * (no VMStructs, an unknown HotSpot version); the reason was printed once
 * to stderr and is available from profile2_unsupported_reason(). In a
 * process without a JVM it returns PROFILE2_NATIVE_ITERATOR once
 * profile2_init_native() succeeded, else 0 (and prints nothing; the reason
 * is still available): a JVM started later is picked up by the next call.
 * Context: Anywhere (AS-Safe after the first call returned). */
PROFILE2_API int ASGST_Capabilities(void);

/* ------------------------------------------------------------------------ */
/* Frames and iterators                                                      */

enum ASGST_FrameTypeId {
  ASGST_FRAME_JAVA = 1,         /* interpreted or compiled Java frame */
  ASGST_FRAME_JAVA_INLINED = 2, /* Java method inlined into a compiled frame */
  ASGST_FRAME_JAVA_NATIVE = 3,  /* native method (its wrapper frame) */
  ASGST_FRAME_NON_JAVA = 4      /* C/C++ or other non-Java code */
};

typedef struct {
  uint8_t type;        /* enum ASGST_FrameTypeId, 0 on error */
  int comp_level;      /* 0 interpreted, 1-4 compiled tier, -1 unknown */
  int bci;             /* bytecode index, -1 where there is none. A compiled
                        * top frame walked from a signal (an interrupted pc,
                        * not a call) is named, with its inlined methods, by
                        * the debug information recorded at or before the pc
                        * in code compiled with DebugNonSafepoints, where
                        * AsyncGetCallTrace and JFR take the record after it
                        * (docs/agent.md, "Compiled code") */
  ASGST_Method method; /* NULL for non-Java frames, and for a queue element's
                        * captured frame whose method HotSpot freed before
                        * the drain (see ASGST_GetMethodInfo) */
  void *pc;            /* program counter in this frame */
  void *sp;            /* stack pointer of this frame, may be NULL */
  void *fp;            /* frame pointer of this frame, may be NULL */
} ASGST_Frame;

enum ASGST_Options {
  /* yield C/C++ frames too (from the native unwinder) */
  ASGST_INCLUDE_NON_JAVA_FRAMES = 1,
  /* stop at the first bytecode-backed Java frame: NextFrame returns 0 for it
   * and fills only pc, sp and fp (type ASGST_FRAME_JAVA). */
  ASGST_END_ON_FIRST_JAVA_FRAME = 2
};

/* What the walked thread was doing; values above 1 are implementation kinds. */
enum ASGST_TRACE_KIND {
  ASGST_JAVA_TRACE = 1,    /* the thread has Java frames */
  ASGST_NON_JAVA_TRACE = 2 /* a thread (or a moment) without Java frames */
};

enum ASGST_Error {
  ASGST_NO_FRAME = 0,             /* walk ended normally */
  ASGST_NO_THREAD = -1,           /* not a Java thread (or not attached) */
  ASGST_THREAD_EXIT = -2,         /* the thread is exiting */
  ASGST_UNSAFE_STATE = -3,        /* thread state does not allow a walk */
  ASGST_NO_TOP_JAVA_FRAME = -4,   /* no Java frame on this stack */
  ASGST_ENQUEUE_NO_QUEUE = -5,    /* no queue registered */
  ASGST_ENQUEUE_FULL_QUEUE = -6,  /* safepoint queue is full */
  ASGST_ENQUEUE_OTHER_ERROR = -7  /* other enqueue failure */
  /* values < -16 are implementation specific: see enum PROFILE2_Error */
};

/* profile2's own error codes (all < -16). Every walk or call that fails with
 * one of these means exactly what its comment says; no code is reused. */
enum PROFILE2_Error {
  /* The running JVM cannot be read: no VMStructs, unknown version, or a
   * required structure is missing. ASGST_Capabilities() is 0. */
  PROFILE2_UNSUPPORTED_JVM = -17,
  /* A read of VM memory hit an unmapped or protected address. */
  PROFILE2_UNREADABLE_MEMORY = -18,
  /* profile2 is not started for this JVM yet. It starts itself (see
   * "Start-up" at the top of this file): walks return this code only
   * between Agent_OnLoad and VMInit (or, after a dynamic attach from a
   * thread the VM does not know, until the next Java thread starts). */
  PROFILE2_NOT_INITIALIZED = -19,
  /* A queue element's captured frames are no longer on the stack at drain
   * time: the iterator yields only the captured frames. */
  PROFILE2_STALE_ELEMENT = -20,
  /* A value read from the VM is inconsistent (e.g. a frame size out of range,
   * a pc outside its code blob): the walk stops instead of guessing. */
  PROFILE2_INCONSISTENT_VM_DATA = -21,
  /* The class of a method was unloaded; its metadata is not read. Also
   * from ASGST_NextFrame on a queue element whose captured frame's class
   * was unloaded after the capture: the iterator stops there. */
  PROFILE2_CLASS_UNLOADED = -22,
  /* The pc is in code profile2 cannot attribute to any frame kind. */
  PROFILE2_UNKNOWN_CODE = -23,
  /* The top frame is being built or torn down and could not be
   * reconstructed: a compiled method's prologue or epilogue, a stub that
   * keeps no frame HotSpot describes, or the interpreter's entry of a
   * method before it has saved its caller's sp. (Once the interpreter has
   * pushed the Method*, the frame is yielded at bci 0; before, the caller
   * is the top frame, at its call.) */
  PROFILE2_FRAME_NOT_COMPLETE = -24,
  /* The walk reached the boundary of a mounted virtual thread's
   * continuation (JDK 21+); frames below belong to the carrier. A walk
   * that starts in HotSpot's thaw (copying the virtual thread's frames
   * from its heap chunk to the stack) ends here after thaw's native
   * frames: the virtual thread's own frames are in flux and not yielded. */
  PROFILE2_CONTINUATION_BOUNDARY = -25,
  /* An argument is out of range or NULL where a value is required. */
  PROFILE2_INVALID_ARGUMENT = -26,
  /* Memory could not be allocated (never in a signal handler). */
  PROFILE2_OUT_OF_MEMORY = -27,
  /* A queue element's captured compiled frame ran in code that was freed
   * before the drain (its nmethod was flushed or unloaded): the frame
   * cannot be described, the iterator stops there. */
  PROFILE2_CODE_GONE = -28,
  /* The walk reached the return barrier of a virtual thread whose older
   * frames HotSpot has not copied back to the stack yet (they are in the
   * continuation's heap chunks until the thread returns to them), and
   * could not read them there: under ZGC (no raw oop reads), or where a
   * chunk or a frame in it did not check. The frames yielded so far are
   * the virtual thread's youngest. Elsewhere (JDK 25) the walk goes on
   * through the chunks to the continuation boundary. */
  PROFILE2_CONTINUATION_NOT_THAWED = -29
};

typedef void (*ASGST_IteratorHandler)(ASGST_Iterator *iterator, void *arg);

/* Create an iterator for the current thread at the point described by
 * ucontext (a ucontext_t*, as passed to a SA_SIGINFO handler), pass it to fun
 * with arg, and return the trace kind (> 0) or an error (<= 0). The iterator
 * is valid only inside fun.
 * Context: AS-Safe; the ucontext must belong to the calling thread. */
PROFILE2_API int ASGST_RunWithIterator(void *ucontext, int32_t options,
                                       ASGST_IteratorHandler fun, void *argument);

/* Like ASGST_RunWithIterator, starting from a frame given by sp, fp and pc.
 * One difference: with a ucontext, an interpreted top frame's bci comes from
 * the interpreter's bcp register (r13 on x86-64), which is current; from a
 * frame, it comes from the bcp the interpreter last saved in the frame (at
 * its last call or safepoint poll), which may be an earlier bytecode.
 * Context: AS-Safe; the frame must belong to the calling thread's stack. */
PROFILE2_API int ASGST_RunWithIteratorFromFrame(void *sp, void *fp, void *pc, int options,
                                                ASGST_IteratorHandler fun, void *argument);

/* Reset the iterator to its first frame.
 * Context: AS-Safe; inside the handler that received the iterator. */
PROFILE2_API void ASGST_RewindIterator(ASGST_Iterator *iterator);

/* Fill *frame with the next frame (youngest first). Returns 1 for a frame,
 * 0 at the end, or an error (< 0; the frame's type and pointers are 0).
 *   ASGST_Frame frame;
 *   while (ASGST_NextFrame(it, &frame) == 1) { ... }
 * With ASGST_END_ON_FIRST_JAVA_FRAME, the first bytecode-backed frame ends the
 * walk: 0 is returned and only pc, sp, fp and type are filled.
 * Context: AS-Safe; inside the handler that received the iterator. */
PROFILE2_API int ASGST_NextFrame(ASGST_Iterator *iterator, ASGST_Frame *frame);

/* The value the next ASGST_NextFrame call would return: 1 if a frame
 * follows, 0 at the end or for a NULL iterator, < 0 for an error.
 * Context: AS-Safe; inside the handler that received the iterator. */
PROFILE2_API int ASGST_State(ASGST_Iterator *iterator);

/* State of the calling thread as a subset of JVMTI thread state bits
 * (JVMTI_THREAD_STATE_ALIVE, RUNNABLE, IN_NATIVE, BLOCKED_ON_MONITOR_ENTER,
 * WAITING, WAITING_INDEFINITELY, SLEEPING, IN_OBJECT_WAIT, PARKED); never
 * INTERRUPTED or SUSPENDED. 0 for a thread that is not a Java thread, or a
 * negative error.
 * Context: AS-Safe. */
PROFILE2_API int ASGST_ThreadState(void);

/* ------------------------------------------------------------------------ */
/* Methods and classes                                                       */

/* Caller-provided buffers: set each pointer and its _length (buffer size in
 * bytes, including the terminating NUL) before the call. On return each
 * _length holds the full length of the value (without the NUL) and the
 * buffer holds as much of it as fits, always NUL-terminated. A NULL pointer
 * or zero length skips that field (its length is set to 0). A value that does
 * not exist (no generic signature) is returned as "" with length 0. */
typedef struct {
  ASGST_Class klass;          /* declaring class */
  char *method_name;
  jint method_name_length;
  char *signature;
  jint signature_length;
  char *generic_signature;
  jint generic_signature_length;
  jint modifiers;             /* as JVMTI GetMethodModifiers */
  jint idnum;                 /* per-class method id, stable over redefinition */
  jlong class_idnum;          /* ASGST_GetClassIdNum(klass) */
} ASGST_MethodInfo;

typedef struct {
  char *class_name;           /* JVM signature form, "Ljava/lang/String;" */
  jint class_name_length;
  char *generic_class_name;
  jint generic_class_name_length;
  jint modifiers;             /* as JVMTI GetClassModifiers */
  jlong idnum;                /* stable over redefinition, unique among live classes */
} ASGST_ClassInfo;

typedef struct {
  jint start_bci;
  jint line_number;
} ASGST_MethodLineNumberEntry;

/* Fill *info for method. On a NULL, unreadable or unloaded method every
 * string is "" with length 0, klass is NULL and the numbers are 0.
 *
 * Old versions of redefined or retransformed methods (JVMTI RedefineClasses,
 * RetransformClasses; java.lang.instrument): HotSpot gives every method of
 * the class a new Method* and keeps an old one only while some frame runs
 * it (InstanceKlass::add_previous_version, purge_previous_version_list,
 * oops/instanceKlass.cpp, JDK 17 and 25); then, at a later safepoint and
 * without any event, it frees it, and the class loader's metaspace reuses
 * the memory at once, typically for the next version's methods. So:
 * - Guaranteed right is the answer for a Method* on a stack that cannot
 *   unwind meanwhile: inside the signal handler that walked it (the thread
 *   is stopped in Java code or in native code with the frame below it), or
 *   in a queue handler for the live frames of its stopped thread.
 * - A queue element's captured frames (those above the live ones, which
 *   may have returned before the drain) are checked: an interpreted frame's
 *   Method* is recorded with its identity (declaring class and idnum, which
 *   together give one name and signature); if at the drain the address no
 *   longer holds that identity, the frame yields the class's current version
 *   of the method (same idnum; HotSpot keeps the idnum across versions whose
 *   bytecode is equivalent) or, if there is none (an obsolete version whose
 *   bytecode changed gets a fresh idnum), a NULL method; never the method
 *   that lives at the address now. Compiled and native-wrapper frames are
 *   checked through their code (PROFILE2_CODE_GONE). The check holds when
 *   the frame is yielded: queue handlers run while safepoints go on, so
 *   the method may be freed right after it; the identity checked is
 *   profile2_frame_captured_identity's, to key the frame with.
 * - A Method* kept and looked at later may have been freed and reused: the
 *   answer is then that of whatever method lives there now, or the
 *   unreadable one; it never crashes. A profiler that keeps Method*s must
 *   copy what it needs where they were captured, or keep with each its
 *   identity (klass and idnum of this call, AS-Safe) and trust a later
 *   answer only if it gives the same identity; the same name follows,
 *   though the line table may be that of another version of the method.
 *   profile2's agent does both (agent/methods.c).
 * Class-unload handlers are not called for old versions (docs/conformance.md,
 * D8).
 * Context: AS-Safe (methods of classes unloaded concurrently read as
 * unreadable, never crash). */
PROFILE2_API void ASGST_GetMethodInfo(ASGST_Method method, ASGST_MethodInfo *info);

/* The per-class id of method (ConstMethod idnum), or 0 if unreadable.
 * Context: AS-Safe. */
PROFILE2_API jint ASGST_GetMethodIdNum(ASGST_Method method);

/* Write up to length entries of method's line number table (bci -> line)
 * into entries, in class-file order; return the total number of entries
 * (which may exceed length), or 0 if the method has none or is unreadable.
 * Context: AS-Safe. */
PROFILE2_API int ASGST_GetMethodLineNumberTable(ASGST_Method method,
                                                ASGST_MethodLineNumberEntry *entries,
                                                int length);

/* The source line of bci in method (the entry with the greatest start_bci
 * <= bci, as JVMTI consumers compute it), or -1 if not available.
 * Context: AS-Safe. */
PROFILE2_API jint ASGST_GetMethodLineNumber(ASGST_Method method, jint bci);

/* Fill *info for klass; see ASGST_GetMethodInfo for the buffer rules.
 * Context: AS-Safe. */
PROFILE2_API void ASGST_GetClassInfo(ASGST_Class klass, ASGST_ClassInfo *info);

/* The id of klass (see ASGST_ClassInfo.idnum), 0 if unreadable.
 * Context: AS-Safe. */
PROFILE2_API jlong ASGST_GetClassIdNum(ASGST_Class klass);

/* The class declaring method, or NULL if unreadable.
 * Context: AS-Safe. */
PROFILE2_API ASGST_Class ASGST_GetClass(ASGST_Method method);

/* The jmethodID of method if the JVM has already created one, else NULL.
 * Never creates a jmethodID.
 * Context: AS-Safe. */
PROFILE2_API jmethodID ASGST_MethodToJMethodID(ASGST_Method method);

/* The method behind a jmethodID, or NULL (e.g. for a method of an unloaded
 * class).
 * Context: Anywhere, on a thread attached to the JVM. */
PROFILE2_API ASGST_Method ASGST_JMethodIDToMethod(jmethodID methodID);

/* The class behind a JNI class reference (local, global or weak), or NULL;
 * NULL also before profile2 has started (it does not start itself here:
 * starting takes a lock). Depends on the collector (docs/conformance.md,
 * "Collectors"): under G1, Parallel, Serial, Epsilon and Shenandoah it
 * answers; under ZGC (JDK 17's and the generational one of JDK 21+) it is
 * always NULL, because a reference holds a colored pointer that only ZGC's
 * load barrier may resolve, which a signal handler outside the VM cannot
 * run (profile2 prints one line saying so at start-up). Outside a signal
 * handler, ASGST_GetMethodInfo(ASGST_JMethodIDToMethod(id)).klass of any
 * of its methods gives the class under every collector.
 * Context: AS-Safe; on the thread that owns the reference (any thread for
 * a global one). */
PROFILE2_API ASGST_Class ASGST_JClassToClass(jclass klass);

/* A new JNI local reference to klass's java.lang.Class, in the calling
 * thread's current local frame, or NULL. Under ZGC (docs/conformance.md,
 * "Collectors") it is found through a jmethodID HotSpot already made for
 * one of klass's methods, so it is NULL for a class none of whose methods
 * has one yet (JNI GetMethodID, JVMTI GetClassMethods and stack traces
 * make them).
 * Context: Anywhere, on a thread attached to the JVM (not in a signal
 * handler). */
PROFILE2_API jclass ASGST_ClassToJClass(ASGST_Class klass);

/* Called once per class unloaded (redefined = false) with the class and all
 * its methods. Inside the handler ASGST_GetMethodInfo, ASGST_GetClassInfo and
 * the line-number functions still answer for them; after it returns the
 * pointers are dead. Handlers run on a JVM-internal service thread, one
 * unload at a time, in registration order. Class redefinition does not call
 * handlers on HotSpot (it keeps Method* of old versions alive while in use).
 */
typedef void (*ASGST_ClassUnloadHandler)(ASGST_Class klass, ASGST_Method *methods, int count,
                                         bool redefined, void *arg);

/* Register handler with arg (the same pair may be registered once).
 * Context: Anywhere (not in a signal handler nor a class-unload handler). */
PROFILE2_API void ASGST_RegisterClassUnloadHandler(ASGST_ClassUnloadHandler handler, void *arg);

/* Remove a registration; true if it was present.
 * Context: Anywhere (not in a signal handler nor a class-unload handler). */
PROFILE2_API bool ASGST_DeregisterClassUnloadHandler(ASGST_ClassUnloadHandler handler, void *arg);

/* ------------------------------------------------------------------------ */
/* Safepoint queues (capability ASGST_REGISTER_QUEUE)                        */

/* How the queues work on a stock JVM (see docs/DESIGN.md): ASGST_Enqueue
 * records the first Java frame and a few physical frames below it in the
 * signal handler. profile2's drainer thread processes the queues every
 * 1 ms while elements arrive (PROFILE2_DRAIN_PERIOD_MS in the environment,
 * 1..1000), at once for a queue an enqueue filled to half its capacity,
 * and when it slept for want of elements, at the next enqueue (which then
 * costs one write(2) to an eventfd). The drainer suspends
 * the queue's thread (JVMTI SuspendThread, a HotSpot handshake), walks its
 * live stack once, runs the handlers, and resumes it. It does so only when
 * the live stack is needed: when an element's capture stopped above the
 * bottom of the stack, or a start or end handler was registered with
 * offerIterator. Elements whose capture reached the bottom hold their whole
 * stack, and their handlers run while the thread runs on
 * (PROFILE2_QueueStats.unheld_drains). An element's
 * iterator yields its captured frames down to the deepest one still on the
 * stack, then the live frames below; if none is live any more, only the
 * captured frames, and then ASGST_State / ASGST_NextFrame return
 * PROFILE2_STALE_ELEMENT.
 *
 * Limits of the emulation: a spliced stack is exact down to the deepest
 * captured frame, which must still be live at the same stack address in
 * the same code; below it profile2 assumes the thread did not return past
 * it in the meantime. A thread that did, and rebuilt frames of the same
 * code at exactly the same addresses (recursion), shows the rebuilt
 * callers: a few elements in 100,000 in tests/jvm/queue. More captured
 * frames (PROFILE2_QUEUE_CAPTURE) make that rarer.
 *
 * Because the thread may be suspended while handlers run, a handler must
 * not wait for a lock that a Java thread may hold while calling into the
 * JVM (JNI or JVMTI): that thread may be the one suspended. Nor may it
 * assume the thread stopped: it is, for the start and end handlers with an
 * iterator and whenever an element needs the live stack, not otherwise.
 *
 * Concurrency:
 *   ASGST_Enqueue, GetEnqueuableElement,   | the queue's own thread (signal
 *   GetQueueElement, GetQueueSizeInfo,     | handlers); concurrent with drains
 *   ResizeQueue                            |
 *   handlers (ASGST_Handler, start / end)  | the drainer thread, one queue at
 *                                          | a time, thread suspended when
 *                                          | the live stack is needed
 *   RegisterQueue, DeregisterQueue,        | any thread; DeregisterQueue waits
 *   SetOnQueueProcessingStart/End          | for a drain of that queue
 */

/* Called at drain time for every queued element, oldest first, with an
 * iterator over the element's stack, the queue's argument and the element's
 * argument. Runs outside signal context: it may allocate and lock, but must
 * not call JVMTI functions on the walked thread. */
typedef void (*ASGST_Handler)(ASGST_Iterator *iterator, void *queue_arg, void *arg);

/* Called before / after the elements of a non-empty queue are processed,
 * with the queue, an iterator over the live stack (NULL unless the handler
 * was registered with offerIterator) and the handler's argument. */
typedef void (*ASGST_OnQueueSafepointHandler)(ASGST_Queue *queue, ASGST_Iterator *iterator,
                                              void *arg);

typedef struct {
  void *pc;  /* pc of the top Java frame */
  void *fp;
  void *sp;
  void *arg; /* argument passed to ASGST_Enqueue, given to the handler */
} ASGST_QueueElement;

typedef struct {
  jint size;     /* elements currently queued */
  jint capacity; /* capacity of the queue */
  jint attempts; /* enqueue attempts since the end of the last drain */
} ASGST_QueueSizeInfo;

/* Register a queue of size elements for the thread of env (the current
 * thread if env is NULL) with handler fun and argument. options:
 * ASGST_INCLUDE_NON_JAVA_FRAMES (elements also capture the native frames
 * above the first Java frame, and their iterators yield C frames: up to
 * 16; of a deeper native stack the top 15, then one frame standing for the
 * rest, with a NULL pc, named PROFILE2_NATIVE_GAP_NAME by
 * profile2_frame_code_name; compression still tells such stacks apart by
 * the frames left out), and
 * PROFILE2_QUEUE_CAPTURE(k). Returns NULL for a thread that is not a Java
 * thread, for profile2's own drainer thread (a Java daemon thread named
 * "profile2 queue drainer", which JVMTI ThreadStart reports like any other),
 * a bad size (1 .. 1<<20) or when out of memory.
 * Context: Anywhere (it does not call into the JVM). */
PROFILE2_API ASGST_Queue *ASGST_RegisterQueue(JNIEnv *env, int size, int options,
                                              ASGST_Handler fun, void *argument);

/* Queue option: capture k physical frames below the first Java frame in
 * the signal handler (0 .. 127; default when not given: 16). Above the
 * frames still live at drain time, the captured ones are what the element's
 * iterator yields; more frames make an element less likely to be stale,
 * at a higher capture cost. */
#define PROFILE2_QUEUE_CAPTURE(k) ((((k) & 0x7f) | 0x80) << 16)

/* ASGST_RegisterQueue for any started platform thread (a java.lang.Thread
 * reference), e.g. for the threads that already run when an agent is
 * attached. env is the calling thread's JNIEnv.
 * Context: Anywhere, on a thread attached to the JVM. */
PROFILE2_API ASGST_Queue *profile2_register_queue_for_thread(JNIEnv *env, jobject thread, int size,
                                                             int options, ASGST_Handler fun,
                                                             void *argument);

/* What happened to a queue's elements since it was registered
 * (profile2_queue_get_stats; read them before ASGST_DeregisterQueue, which
 * frees the queue), or to those of every queue of the process
 * (profile2_queue_get_totals, which also counts what DeregisterQueue itself
 * processed). Losses: lost_resize (elements never processed; lost_deregistered
 * is kept for compatibility and stays 0), late_updates (a compressed sample's weight); full and other
 * are samples refused (the caller still has them); suspend_failures
 * degrade elements to stale without losing them. */
typedef struct {
  jlong enqueued;     /* elements captured and queued */
  jlong full;         /* ASGST_Enqueue refused: queue full */
  jlong other;        /* ASGST_Enqueue refused: nested signal, resize in progress, queue sealed
                         (deregistered, or processed for the last time at VMDeath) */
  jlong drains;       /* times the thread was brought to a safe state and its queue processed */
  jlong spliced;      /* elements joined to the live stack */
  jlong complete;     /* elements whose capture held the whole stack */
  jlong stale;        /* elements delivered with their captured frames only */
  jlong code_gone;    /* elements whose captured code was freed (PROFILE2_CODE_GONE) */
  jlong late_updates; /* an element's arg changed after its handler read it (compression raced the drain) */
  jlong suspend_failures; /* the thread could not be suspended (elements delivered as stale) */
  jlong drain_ns;     /* total time the thread was held for drains */
  jlong capture_failed; /* ASGST_Enqueue found no Java frame or the walk failed: nothing queued */
  jlong lost_resize;  /* elements dropped by a resize to a capacity that did not hold them
                         (the oldest; their handler never ran) */
  jlong compressed;   /* profile2_enqueue_or_match found the sample equal to the youngest element */
  jlong lost_deregistered; /* always 0: an ASGST_Enqueue that races with the last drain of
                              ASGST_DeregisterQueue (or of VMDeath) fails with
                              ASGST_ENQUEUE_NO_QUEUE instead, counted in other */
  jlong cached_walks;  /* element walks below the splice point made with the queue's walk cache
                          (threads whose walks there reach 64 frames) */
  jlong reused_walks;  /* of those, walks that replayed frames of the thread's previous walk */
  jlong reused_frames; /* frames so replayed after checking the stack words they were read from */
  jlong unfrozen_drains; /* drains that left the live stack alone because the thread ran a virtual
                            thread (JVMTI suspends a carrier only when its virtual thread unmounts):
                            the elements keep their captured frames, complete down to the
                            continuation boundary or stale */
  jlong unheld_drains; /* drains that did not suspend the thread: every element's capture held its
                          whole stack (each one complete), and no start or end handler asked for an
                          iterator of the live stack */
  jlong drainer_cpu_ns; /* profile2_queue_get_totals only (0 per queue): CPU time of the library's
                           drainer thread, which runs every queue's drains and handlers, since it
                           started (updated after each pass that drained) */
  jlong skipped_elements; /* whole elements whose handler skipped their bottom frames: the same as
                             those of the queue's previous whole element it took to its end
                             (profile2_iterator_skip_reused) */
  jlong skipped_frames;   /* the frames so skipped */
  jlong resize_deferred;  /* ASGST_ResizeQueue requests that a drain's end could not apply because
                             the thread's signal handler stayed inside an enqueue (about 10 ms):
                             retried at the end of the queue's next drain */
} PROFILE2_QueueStats;

/* Copy queue's counters into stats. Pass size = sizeof *stats: these
 * structs only grow, by fields added at their end, so a program built
 * against an older header gets the fields it knows and nothing is written
 * past its struct; one built against a newer header than the library gets
 * zeros in the fields the library does not have. (The names carry "get_":
 * the two-argument forms of earlier versions wrote the library's whole
 * struct; a program built against them now stops with an undefined
 * symbol, at load or, with lazy binding, at its first call, instead.)
 * Context: Anywhere. */
PROFILE2_API void profile2_queue_get_stats(ASGST_Queue *queue, PROFILE2_QueueStats *stats, size_t size);

/* The counters of every queue registered in this process so far,
 * deregistered ones included (subtract an earlier copy for an interval);
 * size as above. Context: Anywhere (not in a signal handler: takes a
 * mutex). */
PROFILE2_API void profile2_queue_get_totals(PROFILE2_QueueStats *stats, size_t size);

/* CLOCK_MONOTONIC time (ns) at which the element an iterator belongs to
 * was captured, 0 for iterators that do not belong to a queue element.
 * Context: Drain (inside a queue handler). */
PROFILE2_API jlong profile2_iterator_capture_time(ASGST_Iterator *iterator);

/* Remove queue from its thread (env, if not NULL, must be that thread's).
 * Pending elements are processed first (from the owner thread itself, with
 * their captured frames only; from another thread, with the owner
 * suspended as in a drain). True if it was registered.
 * Context: Anywhere, not in a queue handler. */
PROFILE2_API bool ASGST_DeregisterQueue(JNIEnv *env, ASGST_Queue *queue);

/* Set (or clear with NULL) the handler run before a non-empty queue is
 * processed. Context: Anywhere. */
PROFILE2_API void ASGST_SetOnQueueProcessingStart(ASGST_Queue *queue, int options,
                                                  bool offerIterator,
                                                  ASGST_OnQueueSafepointHandler before,
                                                  void *arg);

/* Set (or clear with NULL) the handler run after a non-empty queue was
 * processed. Context: Anywhere. */
PROFILE2_API void ASGST_SetOnQueueProcessingEnd(ASGST_Queue *queue, int options,
                                                bool offerIterator,
                                                ASGST_OnQueueSafepointHandler end, void *arg);

/* Capture the top Java frame(s) of the queue's thread from ucontext into
 * queue (and wake the drainer if that filled it to half its capacity).
 * Returns the trace kind (> 0) or an error: ASGST_ENQUEUE_FULL_QUEUE,
 * ASGST_ENQUEUE_NO_QUEUE (also when the queue was deregistered, or processed
 * for the last time at VMDeath, during the call: the element is not
 * queued), ASGST_ENQUEUE_OTHER_ERROR (another enqueue into
 * this queue is in progress, e.g. the thread was interrupted inside one),
 * or a walk error.
 * As the proposal allows, the queue may belong to another thread if that
 * thread is stopped for the whole call (profile2 cannot check this: the
 * caller promises it, e.g. the thread waits in its signal handler until
 * the enqueue returned). ucontext is then that thread's own (the one its
 * signal handler received), or NULL to start at its last Java frame, which
 * HotSpot records only while the thread is not running Java code (in
 * native code, blocked, waiting, or suspended): for a thread running Java
 * code NULL gives ASGST_UNSAFE_STATE. A ucontext whose stack pointer is not
 * on that thread's stack gives PROFILE2_INVALID_ARGUMENT. For the calling
 * thread's own queue ucontext is required (NULL: PROFILE2_INVALID_ARGUMENT).
 * Context: AS-Safe; queue belongs to the calling thread, or its thread is
 * stopped during the call. */
PROFILE2_API int ASGST_Enqueue(ASGST_Queue *queue, void *ucontext, void *argument);

/* Fill *element with what ASGST_Enqueue would store for ucontext (arg is set
 * to NULL). Returns ASGST_JAVA_TRACE (1) when the stack has a Java frame
 * (the one described), another trace kind (> 1) when it has none, or an
 * error (< 0).
 * Compression on pc, sp and fp alone (the proposal's way: fold a sample
 * into the youngest element with the same top frame) can merge different
 * stacks: the callers may differ (the same frame re-entered from
 * elsewhere at the same depth), so may an interpreted frame's bci and
 * even its method (the pc is the interpreter's), and for a thread inside
 * one JNI or VM call every native stack above the same Java frame. Use
 * profile2_enqueue_or_match, which compares every captured frame, to
 * compress without that.
 * Context: AS-Safe. */
PROFILE2_API int ASGST_GetEnqueuableElement(void *ucontext, ASGST_QueueElement *element);

/* ASGST_Enqueue with exact compression: when what this call captures
 * equals what the youngest queued element captured (every frame, native
 * ones too with ASGST_INCLUDE_NON_JAVA_FRAMES: pc, sp, fp, and the method
 * and bci of interpreted frames, the code of compiled ones), nothing is
 * queued, *same is set to that element and 0 is returned: the caller folds
 * the sample into the element's arg. Otherwise as ASGST_Enqueue, with
 * *same set to NULL. Costs one capture either way (bench/queue_cost.sh).
 * Writing the element's arg races with a drain that has just read it and
 * with a resize that copies it (both counted in late_updates: the weight
 * is lost); when the arg is a count, use profile2_enqueue_or_add, which
 * has no such race. Otherwise let arg point to memory of your own that the
 * element handler marks as taken, and compress only into an untaken one
 * (examples/queue_sampler). A full queue refuses the sample even when it
 * equals the youngest element (the capture needs the free slot). An
 * element of profile2_enqueue_or_add whose drain has already taken its arg
 * is not matched (the capture is queued); a drain may still take it right
 * after the match, and then its arg no longer holds a count (below).
 * Context: AS-Safe, as ASGST_Enqueue. */
PROFILE2_API int profile2_enqueue_or_match(ASGST_Queue *queue, void *ucontext, void *argument,
                                           ASGST_QueueElement **same);

/* Exact compression for an arg that is an integer (a weight, or a weight
 * with flags in its low bits): when what this call captures equals what
 * the youngest queued element captured (as profile2_enqueue_or_match
 * compares them), add is added to that element's arg and 0 is returned;
 * otherwise, and also when that element's drain has already read its arg,
 * the capture is queued with argument, as ASGST_Enqueue does (same return
 * values). The addition and the drain's read of the arg are atomic with
 * respect to each other, so every added amount reaches the element's
 * handler or is in a new element: none is lost, none is counted in
 * late_updates. Only elements this function queued are added to (an
 * element of ASGST_Enqueue or profile2_enqueue_or_match is not: a new one
 * is queued); once their handler has run, their arg no longer holds the
 * value handed to it. A full queue refuses the sample even when it equals
 * the youngest element.
 * Context: AS-Safe, as ASGST_Enqueue. */
PROFILE2_API int profile2_enqueue_or_add(ASGST_Queue *queue, void *ucontext, void *argument, uintptr_t add);

/* The n-th element: 0 .. size-1 from the oldest, -1 .. -size from the
 * youngest; NULL when out of range. The arg field of the returned element may
 * be changed (compression) until the queue is resized.
 * Context: AS-Safe; from the owning thread or the drainer. */
PROFILE2_API ASGST_QueueElement *ASGST_GetQueueElement(ASGST_Queue *queue, int n);

/* Size, capacity and attempts since the last drain (every ASGST_Enqueue
 * call: refused and failed captures included).
 * Context: AS-Safe (exact only on the owning thread). */
PROFILE2_API ASGST_QueueSizeInfo ASGST_GetQueueSizeInfo(ASGST_Queue *queue);

/* Request a new capacity; it takes effect at the end of the next drain (or
 * the current one, if a drain is running). When the thread's signal handler
 * stays inside an enqueue at that moment (about 10 ms: a thread descheduled
 * in its handler), it is retried at the end of each later drain, counted in
 * PROFILE2_QueueStats.resize_deferred.
 * Context: AS-Safe; from the owning thread or a queue handler. */
PROFILE2_API void ASGST_ResizeQueue(ASGST_Queue *queue, int size);

/* ------------------------------------------------------------------------ */
/* Frame marks (capability ASGST_MARK_FRAME)                                 */

/* Not offered by profile2 on a stock JVM (docs/DESIGN.md, "Frame marks"):
 * ASGST_Capabilities() never reports ASGST_MARK_FRAME, RegisterFrameMark
 * returns NULL and the other functions accept NULL and do nothing. They
 * are declared for source compatibility with the proposal. */

/* Called when the frame a mark points to has been unwound (the stack pointer
 * of the unwound frame is above the mark), with an iterator over the stack. */
typedef void (*ASGST_FrameMarkHandler)(ASGST_FrameMark *mark, ASGST_Iterator *iterator,
                                       void *arg);

/* Register a mark for the thread of env (current if NULL). It points to no
 * frame until ASGST_MoveFrameMark. Context: Anywhere. */
PROFILE2_API ASGST_FrameMark *ASGST_RegisterFrameMark(JNIEnv *env, ASGST_FrameMarkHandler handler,
                                                      int options, void *arg);

/* Point mark at the frame with stack pointer new_sp. Context: Anywhere or
 * Drain. */
PROFILE2_API void ASGST_MoveFrameMark(ASGST_FrameMark *mark, void *new_sp);

/* The stack pointer the mark points to, or NULL. Context: AS-Safe. */
PROFILE2_API void *ASGST_GetFrameMarkStackPointer(ASGST_FrameMark *mark);

/* Remove mark. Context: Anywhere. */
PROFILE2_API void ASGST_RemoveFrameMark(ASGST_FrameMark *mark);

/* ------------------------------------------------------------------------ */
/* profile2 extensions                                                       */

/* Optional: profile2 starts itself (see "Start-up" at the top of this
 * file). This hands it vm at once, for an embedder that creates the JVM
 * with JNI_CreateJavaVM after loading the library, and finishes start-up on
 * the calling thread when it is a Java thread in the live phase (VMInit or
 * later). Idempotent. Returns 0 (from Agent_OnLoad: the JVM can be read and
 * walks work from VMInit on), or a negative enum PROFILE2_Error.
 * Context: Anywhere (not in a signal handler). */
PROFILE2_API int profile2_init(JavaVM *vm);

/* Prepare native-only stack walking (fault-tolerant reads, the libunwind
 * set-up), for a process that has no JVM yet or never will: afterwards
 * ASGST_RunWithIterator with ASGST_INCLUDE_NON_JAVA_FRAMES walks any
 * thread's native frames. Safe to call before a JVM starts; profile2_init()
 * later re-arms the fault handling after the JVM installed its signal
 * handlers. Idempotent. Returns 0 or a negative enum PROFILE2_Error.
 * Context: Anywhere (not in a signal handler). */
PROFILE2_API int profile2_init_native(void);

/* Have HotSpot record debug information at every compiled instruction,
 * not only at safepoints (its DebugNonSafepoints flag, as JDK Flight
 * Recorder sets it), for methods compiled from now on. Without it a sample
 * in a compiled loop that contains no call or safepoint names the
 * enclosing compiled method instead of the inlined method and line it is
 * in. Call it as early as possible (Agent_OnLoad): code compiled before
 * keeps its coarse debug information. Costs some code-cache memory.
 * Returns 1 if the flag was turned on, 0 if it was on already, or a
 * negative enum PROFILE2_Error.
 * Context: Anywhere (not in a signal handler); needs no JavaThread, works
 * from Agent_OnLoad before profile2_init(). */
PROFILE2_API int profile2_debug_non_safepoints(void);

/* Pick up native libraries loaded or unloaded since the last call, so that
 * native frames in them are unwound with their DWARF information (cheap
 * when nothing changed). Call it periodically, e.g. once a second.
 * Context: Anywhere (not in a signal handler). */
PROFILE2_API void profile2_refresh_native_modules(void);

/* The OS thread id (gettid()) of a started, not yet terminated platform
 * thread (a java.lang.Thread reference, a jthread in JVMTI's terms); 0 for a thread that has not started, has terminated, or is a
 * virtual thread; a negative enum PROFILE2_Error if profile2 is not
 * initialized. env is the calling thread's JNIEnv.
 * Context: Anywhere, on a thread attached to the JVM (not in a signal
 * handler). */
PROFILE2_API jint profile2_thread_os_id(JNIEnv *env, jobject thread);

/* Which virtual thread the calling thread runs: the Thread.threadId() of
 * the virtual thread mounted on it (it is that virtual thread's carrier),
 * 0 when it runs none (a platform thread, a carrier between two virtual
 * threads, a thread that is not a Java thread), or a negative enum
 * PROFILE2_Error: PROFILE2_UNSUPPORTED_JVM when a virtual thread is mounted
 * but its id cannot be read without the collector's barriers (ZGC: the id
 * is a field of the java.lang.Thread object) or profile2 could not check
 * where the id is at start-up; PROFILE2_NOT_INITIALIZED;
 * PROFILE2_UNREADABLE_MEMORY. A virtual thread counts as mounted from
 * Continuation.enterSpecial until it yields or ends, the span in which a
 * walk yields its frames above PROFILE2_CONTINUATION_BOUNDARY; the
 * carrier's frames of mounting and unmounting are the carrier's. JDK 17
 * has no virtual threads: always 0. Meant for a signal handler that labels
 * its sample.
 * Context: AS-Safe. */
PROFILE2_API jlong profile2_virtual_thread_id(void);

/* HotSpot's name for the generated code that the frame last returned by
 * ASGST_NextFrame runs in, when that frame is a non-Java frame
 * (ASGST_FRAME_NON_JAVA) in the JVM's code cache: a stub ("StubRoutines
 * (1)", "vtable chunks", a runtime stub such as "_new_array_Java"), an
 * adapter ("I2C/C2I adapters") or the interpreter's own code
 * ("Interpreter"): the name of its CodeBlob. NULL after any other frame
 * (Java frames, C/C++ code in a library or in libjvm, free code-cache
 * space), after an error or the end, and for a NULL iterator.
 * The string is HotSpot's own, in libjvm's read-only data: it stays valid
 * for the life of the process, so a handler may keep the pointer and read
 * it later, even after the blob was freed. A blob whose name is not there
 * (a copy in the C heap) is named by its kind instead ("upcall_stub").
 * For a safepoint-queue element's captured frames, the name was taken in
 * the signal handler that captured them; the frame that stands for the
 * native frames an element could not hold (ASGST_RegisterQueue) is named
 * PROFILE2_NATIVE_GAP_NAME, a string of profile2's.
 * Context: AS-Safe; inside the handler that received the iterator. */
PROFILE2_API const char *profile2_frame_code_name(ASGST_Iterator *iterator);

/* profile2_frame_code_name of the frame that stands for the native frames
 * a queue element could not hold (ASGST_RegisterQueue). */
#define PROFILE2_NATIVE_GAP_NAME "[native frames not captured]"

/* For the frame the iterator yielded last, if it is one of a queue
 * element's captured frames: the identity of its method (declaring class
 * and idnum, as profile2_method_identity gives them) that the iterator
 * checked it against when it yielded it. Why: queue handlers run while
 * safepoints go on, so HotSpot may free an old version of a redefined
 * method whose frame returned after the capture, and reuse its memory for
 * another method of the class, at any moment: also between the check and
 * the handler's own look at the method. An identity or a name read by the
 * handler afterwards (profile2_method_identity, ASGST_GetMethodInfo) may
 * then be the other method's. A handler that keys methods by Method* and
 * identity (see ASGST_GetMethodInfo on redefinition) keys a captured frame
 * with this identity, and trusts names it reads at the address only if
 * the address gives this identity both before and after the read.
 * The identity is an interpreted frame's, recorded in the signal handler
 * (also for the class's current version that stands in for a freed one),
 * or a compiled or native-wrapper frame's, read while its code was known
 * to be the captured code. Returns true and fills *klass and *idnum, or
 * false (*klass NULL, *idnum 0): a non-Java frame, a NULL method, an
 * identity unreadable at the capture, or a frame that is not a captured
 * one (a signal walk's, a queue handler's live frames: their methods stay
 * alive while the handler runs, profile2_method_identity answers for them).
 * Either pointer may be NULL.
 * Context: AS-Safe; inside the handler that received the iterator. */
PROFILE2_API bool profile2_frame_captured_identity(ASGST_Iterator *iterator, ASGST_Class *klass, jint *idnum);

/* Incremental walks (seeds/000, "incremental stack tracing"). A walk cache
 * holds one thread's last walk; a walk given the cache reuses that walk's
 * frames below the first frame it finds unchanged, and is recorded for the
 * next. Unchanged means: the walker reaches a frame in the same state as
 * in the recorded walk (same sp, pc and frame pointer, so the same
 * activation slot and return pc) and every word it read from memory from
 * there on in the recorded walk (each frame's return address and saved
 * frame pointer, an interpreted frame's Method* and bcp slots, a native
 * frame's unwinding loads) still holds the same value. The walk then yields
 * exactly what a full walk would; only the checks of those words are paid
 * for the frames below, about one load per word. A class unload since the
 * recording, a walk that ended in an error or that went deeper than the
 * cache holds leaves no record (the next walk is a full one).
 *
 * Keep one cache per thread and use it only for that thread's walks. A
 * cache is used by one walk at a time: a walk that finds it in use (a
 * nested signal) walks in full without it.
 *
 * profile2_walk_cache_create: a cache for walks of up to max_frames frames
 * (1 .. 65536; about 230 bytes a frame, plus 20 KB), NULL when out of memory or on a
 * bad max_frames. Context: Anywhere (allocates; not in a signal handler). */
typedef struct profile2_walk_cache profile2_walk_cache;
PROFILE2_API profile2_walk_cache *profile2_walk_cache_create(int max_frames);

/* Free a cache no walk uses any more. Context: Anywhere. */
PROFILE2_API void profile2_walk_cache_destroy(profile2_walk_cache *cache);

/* ASGST_RunWithIterator, incremental with cache (NULL: as
 * ASGST_RunWithIterator). The iterator yields the same frames as
 * ASGST_RunWithIterator's would; ASGST_RewindIterator restarts as a full
 * walk. Context: AS-Safe; cache holds walks of the calling thread. */
PROFILE2_API int profile2_run_with_iterator_cached(void *ucontext, int32_t options, profile2_walk_cache *cache,
                                                   ASGST_IteratorHandler fun, void *argument);

/* What a cache did since it was created: walks started with it, walks that
 * reused recorded frames, the frames reused, the words checked to reuse
 * them, and the recorded frames found but rejected because a word had
 * changed. size = sizeof *out, as for profile2_queue_get_stats. Context:
 * AS-Safe; the counters are read without the walk's ownership and may
 * lag. */
typedef struct {
  uint64_t walks, reused_walks, reused_frames, verified_reads, rejected;
} PROFILE2_WalkCacheStats;
PROFILE2_API void profile2_walk_cache_get_stats(const profile2_walk_cache *cache, PROFILE2_WalkCacheStats *out,
                                                size_t size);

/* Reuse without taking the frames one by one. An incremental walk that has
 * found its unchanged part yields the recorded walk's frames from there to
 * its end. A profiler that keeps its results for the frames of the walk a
 * cache recorded (method ids, say) can take that part from what it kept
 * instead of taking, one by one, frames it already has.
 *
 * profile2_iterator_recorded: once the iterator's walk has ended normally
 * (ASGST_NextFrame returned 0), the generation under which the cache now
 * records this walk's frames (never 0), or 0 if it does not (a walk that
 * ended in an error or before its end, that went deeper than the cache
 * holds, or had no cache). Keep it with your results for those frames.
 *
 * profile2_iterator_skip_reused: if the frames the iterator yields from
 * here on are, all of them up to its end, the frames from index *from on
 * of the walk recorded under generation kept (the value
 * profile2_iterator_recorded gave for one of your walks with this cache),
 * *count of them: sets *from and *count, moves the iterator past them and
 * returns 1 (the next ASGST_NextFrame returns 0: the walk ended normally).
 * Else returns 0 and changes nothing: go on with ASGST_NextFrame. Worth
 * asking after each frame the walk yields until it answers 1; it answers
 * at once when there is nothing to skip.
 *
 * A walk that skipped is itself recorded as any other (its frames: those it
 * yielded, then the skipped ones), so the chain goes on walk after walk.
 * Generations are unique among all the caches of the process: one kept
 * from another cache (a thread's cache replaced by a larger one) never
 * matches.
 *
 * Queue elements (ASGST_Handler's iterator) take part the same way, with
 * the queue in the cache's role: an element whose capture held its whole
 * stack and whose handler took it to its end becomes the queue's record
 * (profile2_iterator_recorded gives its generation), and the next such
 * element of the queue whose bottom frames are the record's (the same
 * captured frames, each one still decoding as it did: the same nmethod,
 * the same method identity, no class unloaded since) may skip them. Keep
 * one set of results per queue. PROFILE2_QueueStats counts the skips.
 * Context: AS-Safe; within the iterator's handler. */
PROFILE2_API uint64_t profile2_iterator_recorded(ASGST_Iterator *iterator);
PROFILE2_API int profile2_iterator_skip_reused(ASGST_Iterator *iterator, uint64_t kept, int *from, int *count);

/* The identity of method as ASGST_GetMethodInfo gives it (the declaring
 * class in *klass, the ConstMethod idnum in *idnum: together they name one
 * method), for the per-frame check of a profiler that keys methods by
 * Method* and must tell a reused address from the method interned there
 * before (see ASGST_GetMethodInfo on redefinition). Cheaper than
 * ASGST_GetMethodInfo: four fault-tolerant loads of the VM's metadata and
 * nothing else, in particular no lookup in the class-unload snapshots. So
 * the answer is right only for a method that is alive: that of a frame on
 * a stack that cannot unwind meanwhile (in the signal handler that walks
 * it, or a queue handler's live frames). For a Method* kept longer, or a
 * queue element's captured frames, use ASGST_GetMethodInfo, which answers
 * for a class freed by the GC but not yet reported unloaded from its
 * snapshot; here such a method reads as whatever lives at its address now,
 * or as unreadable. Returns true, or false if unreadable (then *klass is
 * NULL and *idnum 0); either pointer may be NULL.
 * Context: AS-Safe (never crashes, whatever method points to). */
PROFILE2_API bool profile2_method_identity(ASGST_Method method, ASGST_Class *klass, jint *idnum);

/* A one-line description of why ASGST_Capabilities() is 0 (or lacks
 * PROFILE2_ITERATOR), or NULL when the JVM is supported.
 * Context: Anywhere. */
PROFILE2_API const char *profile2_unsupported_reason(void);

/* A static string naming an ASGST_* or PROFILE2_* error code.
 * Context: AS-Safe. */
PROFILE2_API const char *profile2_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* PROFILE2_H */
