/* An LD_PRELOAD shim for running a Swift binary under valgrind 3.19 (Debian 12): valgrind's rt_sigsuspend wrapper
 * edits the caller's mask in place, and libdispatch passes a read-only one. The wrapper gets a copy instead.
 * Built by scripts/pgo-trace.sh and Benchmarks/counts.sh: cc -O2 -shared -fPIC -o SHIM.so scripts/valgrind-sigsuspend.c */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (long)(_NSIG / 8));
}
