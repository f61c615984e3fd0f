#ifndef MOYA_GATEWAY_CNETSHIMS_URING_H
#define MOYA_GATEWAY_CNETSHIMS_URING_H

#include <stdint.h>
#include <sys/socket.h>

/* A minimal io_uring used to send many sockets' queued bytes with one system call (see EventLoop's batched flush).
 * Only non-blocking sendmsg is queued (MSG_DONTWAIT): every send completes during the submitting call, so nothing
 * it points to outlives the call's completions. */
struct cns_uring;

/* A ring of `entries` submissions, or NULL when io_uring is unavailable (old kernel, seccomp, disabled by sysctl). */
struct cns_uring *cns_uring_create(unsigned entries);
void cns_uring_destroy(struct cns_uring *ring);
/* How many sends one submission may carry. */
unsigned cns_uring_capacity(const struct cns_uring *ring);
/* Queues sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT); 0, or -1 when the queue is full. */
int cns_uring_queue_sendmsg(struct cns_uring *ring, int fd, const struct msghdr *msg, uint64_t user_data);
/* Submits what is queued; the number submitted, or -errno. `consumed` tells how many of them the kernel took (they
 * are taken in the order queued): on an error, those after it were never seen by the kernel. */
int cns_uring_submit(struct cns_uring *ring, unsigned *consumed);
/* The ring's file descriptor (for tests that break it). */
int cns_uring_fd(const struct cns_uring *ring);
/* Waits until at least `count` completions are ready; 0, or -errno. */
int cns_uring_wait(struct cns_uring *ring, unsigned count);
/* Takes one completion: 1 with `user_data` and `result` (bytes sent, or -errno), 0 when there is none. */
int cns_uring_take_completion(struct cns_uring *ring, uint64_t *user_data, int32_t *result);

#endif
