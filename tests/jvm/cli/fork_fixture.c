/* The native program of the launch tests (launch_test.py): a process that
 * forks while it is being profiled.
 *
 *   fork_fixture MILLIS
 *
 * Prints "pid N". A second thread burns CPU in burn_in_fork_fixture for
 * MILLIS ms of its CPU time (so that forks happen while samples are taken on another
 * thread), while the main thread, between bursts of the same function:
 * forks children that exit() (running the library destructors, where an
 * inherited profile would be written), that _exit(), that burn CPU
 * themselves for a while (an inherited counter would signal them), that
 * fork again, that execl /bin/true; and calls system() twice (glibc runs
 * it through posix_spawn). Prints each child's status, "done", exits 4. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

/* The calling thread's CPU time: on a loaded machine the profile still
 * gets its samples. */
static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

__attribute__((noinline)) uint64_t burn_in_fork_fixture(uint64_t ms) {
  uint64_t end = now_ms() + ms, h = 1;
  while (now_ms() < end)
    for (int i = 0; i < 10000; i++) h = (h * 6364136223846793005ull + 1442695040888963407ull) ^ (h >> 29);
  sink += h;
  return h;
}

static void *burner(void *arg) {
  burn_in_fork_fixture((uint64_t)(uintptr_t)arg);
  return NULL;
}

static int wait_child(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv) {
  uint64_t ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 300;
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  pthread_t t;
  if (pthread_create(&t, NULL, burner, (void *)(uintptr_t)ms) != 0) return 1;
  for (int kind = 0; kind < 6; kind++) {
    burn_in_fork_fixture(ms / 8);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      switch (kind) {
      case 0:
        exit(10);
      case 1:
        _exit(11);
      case 2:
        burn_in_fork_fixture(50);
        exit(12);
      case 3: {
        pid_t g = fork();
        if (g == 0) exit(20);
        exit(wait_child(g) == 20 ? 13 : 1);
      }
      case 4:
        execl("/bin/true", "true", (char *)NULL);
        _exit(1);
      default:
        exit(system("exit 15") == -1 ? 1 : 15);
      }
    }
    printf("child %d exited %d\n", kind, wait_child(pid));
    fflush(stdout);
  }
  int s1 = system("echo system; uname >/dev/null");
  printf("system exited %d\n", WIFEXITED(s1) ? WEXITSTATUS(s1) : -1);
  pthread_join(t, NULL);
  printf("done\n");
  return 4;
}
