/*
 * Counting runtime for programs built with -finstrument-functions: GCC calls __cyg_profile_func_enter(fn, site)
 * at the start of every function body, inlined copies included (fn is then the address of the function's
 * out-of-line copy, which GCC keeps for that purpose). This is the oracle of the corpus tier's exact-count test.
 *
 * Counts live in a fixed-size open-addressing table updated with atomics only (no locks, no allocation), so
 * every thread may call in at once and a signal handler may read the table at any moment.
 *
 * With PROBELENS_COUNTS=PATH in the environment, SIGUSR2 writes a snapshot to PATH.N (N = 1, 2, …), by writing
 * PATH.N.tmp and renaming it, so a reader never sees half a file. The snapshot is taken on the main thread
 * (the handler forwards a signal that landed on another thread), so no main-thread function runs while it is
 * written. Lines:
 *   OFFSET COUNT        (hex offset of the function from the start of the executable's mapping, decimal count)
 *   snapshot N mono_start_ns mono_end_ns overflow busy (last line: CLOCK_MONOTONIC, the clock the tracing
 *                                                       session's tracefs instance uses, at start and end)
 *
 * busy is 1 when the main thread was interrupted in the program's own code, 0 when it was elsewhere (a system
 * call in libc, the vDSO). A busy snapshot may split a call: a uprobe at a function's first instruction traps
 * into the kernel, which delivers a pending signal on the way back, before the body calls the counting hook, so
 * the probe's hit lands before the snapshot and the call's count after it. A reader that needs an exact boundary
 * takes another snapshot when this one is busy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <fcntl.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))
#define SLOTS (1u << 16)

static _Atomic uintptr_t keys[SLOTS];
static _Atomic uint64_t counts[SLOTS];
static _Atomic uint64_t overflow;
static unsigned snapshots;
static char out_path[4096];
/* The linker's symbol for the first byte of the executable's first segment: subtracting it turns a run-time
 * address of a PIE into the address the ELF file (and its symbol table) gives. */
extern char __executable_start;
/* The linker's symbol for the end of the executable's code (the default linker script provides it). */
extern char etext;

NOINST void __cyg_profile_func_enter(void *fn, void *site) {
  (void)site;
  uintptr_t k = (uintptr_t)fn;
  uint32_t h = (uint32_t)(((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 48) & (SLOTS - 1);
  for (uint32_t i = 0; i < SLOTS; i++, h = (h + 1) & (SLOTS - 1)) {
    uintptr_t cur = atomic_load_explicit(&keys[h], memory_order_acquire);
    if (cur == 0) {
      uintptr_t expected = 0;
      if (atomic_compare_exchange_strong(&keys[h], &expected, k)) cur = k;
      else cur = expected;
    }
    if (cur == k) {
      atomic_fetch_add_explicit(&counts[h], 1, memory_order_relaxed);
      return;
    }
  }
  atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
}

NOINST void __cyg_profile_func_exit(void *fn, void *site) {
  (void)fn;
  (void)site;
}

/* Async-signal-safe formatting: snprintf is not. */
NOINST static size_t put_u64(char *p, uint64_t v, unsigned base) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  for (size_t i = 0; i < n; i++) p[i] = tmp[n - 1 - i];
  return n;
}

NOINST static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NOINST static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

/* Whether the interrupted context was running the executable's own code (1), or elsewhere (0). */
NOINST static int interrupted_in_program(const void *context) {
  const ucontext_t *uc = context;
#if defined(__x86_64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 1; /* unknown: say busy, the cautious answer */
#endif
  return pc >= (uintptr_t)&__executable_start && pc < (uintptr_t)&etext;
}

NOINST static void on_signal(int sig, siginfo_t *info, void *context) {
  (void)info;
  int saved_errno = errno;
  pid_t pid = getpid();
  if ((pid_t)syscall(SYS_gettid) != pid) {
    syscall(SYS_tgkill, pid, pid, sig);
    errno = saved_errno;
    return;
  }
  uint64_t start = mono_ns();
  unsigned n = ++snapshots;
  char path[4200], tmp[4300];
  size_t len = strlen(out_path);
  memcpy(path, out_path, len);
  path[len] = '.';
  size_t plen = len + 1 + put_u64(path + len + 1, n, 10);
  path[plen] = 0;
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp", 5);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    errno = saved_errno;
    return;
  }
  static char buf[1 << 16];
  size_t used = 0;
  for (uint32_t h = 0; h < SLOTS; h++) {
    uintptr_t k = atomic_load_explicit(&keys[h], memory_order_acquire);
    if (k == 0) continue;
    if (used > sizeof buf - 64) {
      write_all(fd, buf, used);
      used = 0;
    }
    used += put_u64(buf + used, (uint64_t)(k - (uintptr_t)&__executable_start), 16);
    buf[used++] = ' ';
    used += put_u64(buf + used, atomic_load_explicit(&counts[h], memory_order_relaxed), 10);
    buf[used++] = '\n';
  }
  uint64_t end = mono_ns();
  char head[128];
  size_t hl = 0;
  memcpy(head, "snapshot ", 9);
  hl = 9 + put_u64(head + 9, n, 10);
  head[hl++] = ' ';
  hl += put_u64(head + hl, start, 10);
  head[hl++] = ' ';
  hl += put_u64(head + hl, end, 10);
  head[hl++] = ' ';
  hl += put_u64(head + hl, atomic_load_explicit(&overflow, memory_order_relaxed), 10);
  head[hl++] = ' ';
  head[hl++] = interrupted_in_program(context) ? '1' : '0';
  head[hl++] = '\n';
  write_all(fd, buf, used);
  write_all(fd, head, hl);
  close(fd);
  rename(tmp, path);
  errno = saved_errno;
}

__attribute__((constructor)) NOINST static void install(void) {
  const char *p = getenv("PROBELENS_COUNTS");
  if (!p || !*p || strlen(p) >= sizeof out_path - 32) return;
  strcpy(out_path, p);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  sigfillset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, 0);
}
