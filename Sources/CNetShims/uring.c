#include "cnetshims_uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct cns_uring {
    int fd;
    unsigned entries;
    unsigned queued;
    /* Submission ring */
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    struct io_uring_sqe *sqes;
    /* Completion ring */
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    void *sq_ring;
    size_t sq_ring_size;
    void *cq_ring;
    size_t cq_ring_size;
    size_t sqes_size;
};

static int setup(unsigned entries, struct io_uring_params *params, unsigned flags) {
    memset(params, 0, sizeof *params);
    params->flags = flags;
    return (int)syscall(__NR_io_uring_setup, entries, params);
}

struct cns_uring *cns_uring_create(unsigned entries) {
    struct io_uring_params params;
    int fd = -1;
#ifdef IORING_SETUP_COOP_TASKRUN
    fd = setup(entries, &params, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL);
#endif
    if (fd < 0) fd = setup(entries, &params, 0);
    if (fd < 0) return NULL;
    struct cns_uring *ring = calloc(1, sizeof *ring);
    if (!ring) { close(fd); return NULL; }
    ring->fd = fd;
    ring->entries = params.sq_entries;
    ring->sq_ring_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    ring->cq_ring_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    int single = (params.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single) {
        if (ring->cq_ring_size > ring->sq_ring_size) ring->sq_ring_size = ring->cq_ring_size;
        ring->cq_ring_size = ring->sq_ring_size;
    }
    ring->sq_ring = mmap(NULL, ring->sq_ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                         IORING_OFF_SQ_RING);
    if (ring->sq_ring == MAP_FAILED) goto fail;
    if (single) {
        ring->cq_ring = ring->sq_ring;
    } else {
        ring->cq_ring = mmap(NULL, ring->cq_ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                             IORING_OFF_CQ_RING);
        if (ring->cq_ring == MAP_FAILED) { munmap(ring->sq_ring, ring->sq_ring_size); goto fail; }
    }
    ring->sqes_size = params.sq_entries * sizeof(struct io_uring_sqe);
    ring->sqes = mmap(NULL, ring->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (ring->sqes == MAP_FAILED) {
        munmap(ring->sq_ring, ring->sq_ring_size);
        if (!single) munmap(ring->cq_ring, ring->cq_ring_size);
        goto fail;
    }
    char *sq = ring->sq_ring, *cq = ring->cq_ring;
    ring->sq_head = (unsigned *)(sq + params.sq_off.head);
    ring->sq_tail = (unsigned *)(sq + params.sq_off.tail);
    ring->sq_mask = (unsigned *)(sq + params.sq_off.ring_mask);
    ring->sq_array = (unsigned *)(sq + params.sq_off.array);
    ring->cq_head = (unsigned *)(cq + params.cq_off.head);
    ring->cq_tail = (unsigned *)(cq + params.cq_off.tail);
    ring->cq_mask = (unsigned *)(cq + params.cq_off.ring_mask);
    ring->cqes = (struct io_uring_cqe *)(cq + params.cq_off.cqes);
    return ring;
fail:
    close(fd);
    free(ring);
    return NULL;
}

void cns_uring_destroy(struct cns_uring *ring) {
    if (!ring) return;
    munmap(ring->sqes, ring->sqes_size);
    if (ring->cq_ring != ring->sq_ring) munmap(ring->cq_ring, ring->cq_ring_size);
    munmap(ring->sq_ring, ring->sq_ring_size);
    close(ring->fd);
    free(ring);
}

unsigned cns_uring_capacity(const struct cns_uring *ring) { return ring->entries; }

int cns_uring_queue_sendmsg(struct cns_uring *ring, int fd, const struct msghdr *msg, uint64_t user_data) {
    if (ring->queued >= ring->entries) return -1;
    unsigned tail = *ring->sq_tail + ring->queued;
    unsigned index = tail & *ring->sq_mask;
    struct io_uring_sqe *sqe = &ring->sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_SENDMSG;
    sqe->fd = fd;
    sqe->addr = (uint64_t)(uintptr_t)msg;
    sqe->len = 1;
    sqe->msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    sqe->user_data = user_data;
    ring->sq_array[index] = index;
    ring->queued++;
    return 0;
}

int cns_uring_submit(struct cns_uring *ring, unsigned *consumed) {
    unsigned count = ring->queued;
    *consumed = 0;
    if (count == 0) return 0;
    unsigned head = __atomic_load_n(ring->sq_head, __ATOMIC_ACQUIRE);
    __atomic_store_n(ring->sq_tail, *ring->sq_tail + count, __ATOMIC_RELEASE);
    ring->queued = 0;
    /* A submission the kernel refuses stops the call there (without IORING_SETUP_SUBMIT_ALL): the rest are submitted
     * by the next call, so none is left in the ring pointing at memory the caller reuses. */
    unsigned left = count;
    while (left > 0) {
        int submitted = (int)syscall(__NR_io_uring_enter, ring->fd, left, 0, 0, NULL, 0);
        if (submitted < 0) {
            if (errno == EINTR) continue;
            int error = errno;
            *consumed = __atomic_load_n(ring->sq_head, __ATOMIC_ACQUIRE) - head;
            return -error;
        }
        if (submitted == 0) {
            *consumed = __atomic_load_n(ring->sq_head, __ATOMIC_ACQUIRE) - head;
            return -EIO;
        }
        left -= (unsigned)submitted;
    }
    *consumed = count;
    return (int)count;
}

int cns_uring_take_completion(struct cns_uring *ring, uint64_t *user_data, int32_t *result) {
    unsigned head = *ring->cq_head;
    if (head == __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE)) return 0;
    struct io_uring_cqe *cqe = &ring->cqes[head & *ring->cq_mask];
    *user_data = cqe->user_data;
    *result = cqe->res;
    __atomic_store_n(ring->cq_head, head + 1, __ATOMIC_RELEASE);
    return 1;
}

int cns_uring_fd(const struct cns_uring *ring) { return ring->fd; }

int cns_uring_wait(struct cns_uring *ring, unsigned count) {
    for (;;) {
        unsigned ready = __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE) - *ring->cq_head;
        if (ready >= count) return 0;
        int rc = (int)syscall(__NR_io_uring_enter, ring->fd, 0, count - ready, IORING_ENTER_GETEVENTS, NULL, 0);
        if (rc < 0 && errno != EINTR) return -errno;
    }
}
