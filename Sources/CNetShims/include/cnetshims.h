#ifndef MOYA_GATEWAY_CNETSHIMS_H
#define MOYA_GATEWAY_CNETSHIMS_H

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include "cnetshims_uring.h"

/* accept4 is declared only under _GNU_SOURCE, which the Glibc module is not built with. */
extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/* The epoll event bits as plain integers (glibc declares them as an enum plus macros). */
static inline uint32_t cns_EPOLLIN(void) { return EPOLLIN; }
static inline uint32_t cns_EPOLLOUT(void) { return EPOLLOUT; }
static inline uint32_t cns_EPOLLRDHUP(void) { return EPOLLRDHUP; }
static inline uint32_t cns_EPOLLHUP(void) { return EPOLLHUP; }
static inline uint32_t cns_EPOLLERR(void) { return EPOLLERR; }
static inline uint32_t cns_EPOLLET(void) { return EPOLLET; }

/* epoll_event is packed on x86_64; these accessors avoid misaligned loads in Swift. */
static inline uint64_t cns_epoll_event_data(const struct epoll_event *event) { return event->data.u64; }
static inline uint32_t cns_epoll_event_events(const struct epoll_event *event) { return event->events; }
static inline int cns_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}
static inline size_t cns_epoll_event_size(void) { return sizeof(struct epoll_event); }

#endif
