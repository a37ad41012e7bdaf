/* profile2.h is usable as it is installed: it compiles on its own as C (gnu11,
 * and c99 -pedantic) and as C++11 with every warning an error, every function
 * it declares can be named and its address taken, and each reference binds to
 * the symbol libprofile2 exports under the same name (so a missing
 * extern "C" fails here). The same file is compiled as C and as C++
 * (test_header.cpp includes it); the function list comes from the header
 * itself (header_functions.sh), so a new declaration is covered at once. */
#include "profile2.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "header_list.h"

/* Weak references: a function declared in the header but not defined by the
 * library yet resolves to NULL instead of failing the link (check_exports.sh
 * lists which ones are missing). header_anchor.c, linked in as well, keeps
 * libprofile2 a needed library. */
#define P2_WEAK(name) extern __typeof__(name) name __attribute__((weak));
P2_HEADER_FUNCTIONS(P2_WEAK)

struct api_function {
  const char *name;
  void (*address)(void); /* "void (*)(void)" converts to and from every function type */
};

#define P2_ENTRY(name) {#name, (void (*)(void))name},
static const struct api_function functions[] = {P2_HEADER_FUNCTIONS(P2_ENTRY)};

/* Every error code is an integer constant expression. */
#define P2_ERROR_VALUE(name) name,
static const int error_codes[] = {P2_HEADER_ERRORS(P2_ERROR_VALUE)};

/* Every callback type can be implemented with the parameters it declares. */
static void on_iterator(ASGST_Iterator *iterator, void *arg) { (void)iterator, (void)arg; }
static void on_unload(ASGST_Class klass, ASGST_Method *methods, int count, bool redefined, void *arg) {
  (void)klass, (void)methods, (void)count, (void)redefined, (void)arg;
}
static void on_element(ASGST_Iterator *iterator, void *queue_arg, void *arg) {
  (void)iterator, (void)queue_arg, (void)arg;
}
static void on_queue(ASGST_Queue *queue, ASGST_Iterator *iterator, void *arg) {
  (void)queue, (void)iterator, (void)arg;
}
static void on_mark(ASGST_FrameMark *mark, ASGST_Iterator *iterator, void *arg) {
  (void)mark, (void)iterator, (void)arg;
}

int main(void) {
  ASGST_IteratorHandler iterator_handler = on_iterator;
  ASGST_ClassUnloadHandler unload_handler = on_unload;
  ASGST_Handler element_handler = on_element;
  ASGST_OnQueueSafepointHandler queue_handler = on_queue;
  ASGST_FrameMarkHandler mark_handler = on_mark;

  /* Every struct of the API can be declared and zero-initialised. */
  ASGST_Frame frame;
  ASGST_MethodInfo method_info;
  ASGST_ClassInfo class_info;
  ASGST_MethodLineNumberEntry line;
  ASGST_QueueElement element;
  ASGST_QueueSizeInfo size_info;
  memset(&frame, 0, sizeof frame);
  memset(&method_info, 0, sizeof method_info);
  memset(&class_info, 0, sizeof class_info);
  memset(&line, 0, sizeof line);
  memset(&element, 0, sizeof element);
  memset(&size_info, 0, sizeof size_info);

  int enums = ASGST_REGISTER_QUEUE | ASGST_MARK_FRAME | PROFILE2_ITERATOR | ASGST_FRAME_JAVA |
              ASGST_FRAME_JAVA_INLINED | ASGST_FRAME_JAVA_NATIVE | ASGST_FRAME_NON_JAVA |
              ASGST_INCLUDE_NON_JAVA_FRAMES | ASGST_END_ON_FIRST_JAVA_FRAME | ASGST_JAVA_TRACE |
              ASGST_NON_JAVA_TRACE;

  /* Each reference must be the library's symbol of that name: a reference
   * that stayed NULL while the library exports the name means the header
   * declared it under another linkage. */
  void *self = dlopen(NULL, RTLD_NOW); /* the program and its libraries (POSIX) */
  if (self == NULL) {
    fprintf(stderr, "dlopen(NULL): %s\n", dlerror());
    return 1;
  }
  size_t n = sizeof functions / sizeof functions[0], defined = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    void *sym = dlsym(self, functions[i].name);
    void (*exported)(void) = NULL;
    memcpy(&exported, &sym, sizeof exported); /* ISO C has no void* -> function pointer cast */
    if (functions[i].address != exported) {
      fprintf(stderr, "%s: the header's reference is %s, dlsym finds %p\n", functions[i].name,
              functions[i].address != NULL ? "bound elsewhere" : "unbound", sym);
      bad = 1;
    }
    if (functions[i].address != NULL) defined++;
  }
  if (bad) return 1;

  /* The core functions must resolve; in a process without a JVM profile2
   * reports itself unsupported. */
  if (ASGST_Capabilities == NULL || profile2_init == NULL || profile2_strerror == NULL ||
      profile2_unsupported_reason == NULL) {
    fprintf(stderr, "a core function of profile2.h is not defined by libprofile2\n");
    return 1;
  }
  if (ASGST_Capabilities() != 0) {
    fprintf(stderr, "ASGST_Capabilities() != 0 in a process without a JVM\n");
    return 1;
  }
  for (size_t i = 0; i < sizeof error_codes / sizeof error_codes[0]; i++) {
    const char *msg = profile2_strerror(error_codes[i]);
    if (msg == NULL || msg[0] == '\0') {
      fprintf(stderr, "profile2_strerror(%d) is empty\n", error_codes[i]);
      return 1;
    }
  }

  printf("%s: %zu functions declared, %zu defined; %zu error codes; callbacks %d; enums %#x\n",
#ifdef __cplusplus
         "C++",
#else
         "C",
#endif
         n, defined, sizeof error_codes / sizeof error_codes[0],
         iterator_handler != NULL && unload_handler != NULL && element_handler != NULL &&
             queue_handler != NULL && mark_handler != NULL,
         (unsigned)enums);
  return 0;
}
