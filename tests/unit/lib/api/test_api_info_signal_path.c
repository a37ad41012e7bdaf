/* lib/api/api_info.c: the functions profile2.h declares AS-Safe (the
 * proposal's "Signal safe" ones, ASGST_JClassToClass among them, and the
 * extension profile2_method_identity) must neither allocate nor lock, also
 * before profile2 has started, when the tempting thing is to start it (that
 * takes the start-up lock). This program has no JVM, so profile2 never
 * starts: every call takes its not-ready path. The allocator and the locks
 * are interposed (as in tests/unit/queue/test_queue_signal_path.c) and
 * counted while the calls run in a real signal handler. The library is linked as libprofile2.so,
 * through profile2.h only. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "profile2.h"

#include "../../signal_path_interpose.h"

/* A JNI handle's shape: a pointer to a slot holding an object pointer. */
static void *fake_oop_slot;
static ASGST_Class jclass_result = (ASGST_Class)1;
static int handler_runs;

/* Every AS-Safe information function, on the not-ready path. */
static void call_info_functions(void) {
  char a[32], b[32], c[32];
  ASGST_MethodInfo mi = {NULL, a, sizeof a, b, sizeof b, c, sizeof c, 0, 0, 0};
  ASGST_ClassInfo ci = {a, sizeof a, b, sizeof b, 0, 0};
  ASGST_MethodLineNumberEntry lines[4];
  ASGST_Method m = (ASGST_Method)&fake_oop_slot;
  ASGST_Class k = (ASGST_Class)&fake_oop_slot;
  jclass_result = ASGST_JClassToClass((jclass)&fake_oop_slot);
  ASGST_GetMethodInfo(m, &mi);
  ASGST_GetClassInfo(k, &ci);
  (void)ASGST_GetMethodIdNum(m);
  (void)ASGST_GetMethodLineNumberTable(m, lines, 4);
  (void)ASGST_GetMethodLineNumber(m, 0);
  (void)ASGST_GetClassIdNum(k);
  (void)ASGST_GetClass(m);
  (void)ASGST_MethodToJMethodID(m);
  jint idnum;
  (void)profile2_method_identity(m, &k, &idnum);
}

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  in_signal_path = 1;
  call_info_functions();
  handler_runs++;
  in_signal_path = 0;
  errno = saved;
}

Test(api_info_signal_path, interposers_see_allocations_and_locks) {
  /* the check below is worth something only if these are counted */
  in_signal_path = 1;
  void *volatile p = malloc(8); /* volatile: the compiler may drop a malloc/free pair */
  free(p);
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  in_signal_path = 0;
  pthread_mutex_unlock(&mu);
  cr_assert_eq(allocations, 2);
  cr_assert_eq(locks, 1);
}

Test(api_info_signal_path, info_functions_before_startup_neither_allocate_nor_lock) {
  fake_oop_slot = &fake_oop_slot;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
  for (int i = 0; i < 10; i++) raise(SIGUSR1);
  cr_assert_eq(handler_runs, 10, "the handler ran");
  cr_expect_null(jclass_result, "ASGST_JClassToClass answered %p without a JVM", (void *)jclass_result);
  cr_expect_eq(allocations, 0, "the AS-Safe information functions allocated %d times", allocations);
  cr_expect_eq(locks, 0, "the AS-Safe information functions locked %d times", locks);
}
