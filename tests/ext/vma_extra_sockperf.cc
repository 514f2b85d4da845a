// The installed <mellanox/vma_extra.h> included the way sockperf includes
// it (sockperf 3.7's src/defs.h and its vma-xlio-redirect.h):
//  1. its system headers first (src/defs.h's list, in its order);
//  2. then vma-xlio-redirect.h: every socket call becomes a function-like
//     macro calling a function pointer variable fn_<name>;
//  3. RING_LOGIC_* and ring_logic_t #defined to VMA_* names, the #include,
//     the names #undef'd, and the same around xlio_extra.h, which declares
//     its own ring_logic_t (simulated below).
// With -DMINIMAL_PRELUDE step 1 is only <netinet/in.h> (and <stdio.h>,
// <errno.h> for this file's own use): the header must
// then declare none of the redirected calls for the first time (a
// <sys/uio.h> of its own would turn readv's prototype into fn_readv's and
// fail here).
//
// Built by tests/ext/vma_extra_header.sh with g++ and clang++ at -Wall
// -Wextra -pedantic -Werror, then run: vma_get_api() must reach getsockopt
// through the program's fn_getsockopt (the redirect), and without a
// library in the process get NULL with EBADF.
#ifndef MINIMAL_PRELUDE
#define __STDC_FORMAT_MACROS
#include <features.h>
#include <bits/types.h>
#undef __FD_SETSIZE
#define __FD_SETSIZE 32768
#include <sys/select.h>
#include <sys/epoll.h>
#include <stdbool.h>
#include <stdint.h>
#include <unordered_map>
#include <unistd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <assert.h>
#include <signal.h>
#include <time.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <queue>
#include <map>
// vma-xlio-redirect.h's own includes.
#include <sys/poll.h>
#include <sched.h>
#include <resolv.h>
#else
#include <netinet/in.h>
#include <errno.h>  // for the test's own code; neither declares a redirected call
#include <stdio.h>
#endif

// The redirect.  Each call name is a variable, as in sockperf, so that a
// prototype the macro rewrites conflicts with it instead of passing.
typedef int (*getsockopt_fptr_t)(int fd, int level, int optname, void *optval, socklen_t *optlen);
typedef long (*other_fptr_t)(...);
extern getsockopt_fptr_t fn_getsockopt;
extern other_fptr_t fn_socket, fn_close, fn_shutdown, fn_accept, fn_bind, fn_connect, fn_listen,
    fn_setsockopt, fn_fcntl, fn_ioctl, fn_getsockname, fn_getpeername, fn_read, fn_readv, fn_recv,
    fn_recvmsg, fn_recvmmsg, fn_recvfrom, fn_write, fn_writev, fn_send, fn_sendmsg, fn_sendmmsg,
    fn_sendto, fn_select, fn_pselect, fn_poll, fn_ppoll, fn_epoll_create, fn_epoll_create1,
    fn_epoll_ctl, fn_epoll_wait, fn_epoll_pwait, fn_socketpair, fn_pipe, fn_open, fn_creat, fn_dup,
    fn_dup2, fn_clone, fn_fork, fn_vfork, fn_daemon, fn_sigaction;
#define socket(...) fn_socket(__VA_ARGS__)
#define close(...) fn_close(__VA_ARGS__)
#define shutdown(...) fn_shutdown(__VA_ARGS__)
#define accept(...) fn_accept(__VA_ARGS__)
#define bind(...) fn_bind(__VA_ARGS__)
#define connect(...) fn_connect(__VA_ARGS__)
#define listen(...) fn_listen(__VA_ARGS__)
#define setsockopt(...) fn_setsockopt(__VA_ARGS__)
#define getsockopt(...) fn_getsockopt(__VA_ARGS__)
#define fcntl(...) fn_fcntl(__VA_ARGS__)
#define ioctl(...) fn_ioctl(__VA_ARGS__)
#define getsockname(...) fn_getsockname(__VA_ARGS__)
#define getpeername(...) fn_getpeername(__VA_ARGS__)
#define read(...) fn_read(__VA_ARGS__)
#define readv(...) fn_readv(__VA_ARGS__)
#define recv(...) fn_recv(__VA_ARGS__)
#define recvmsg(...) fn_recvmsg(__VA_ARGS__)
#define recvmmsg(...) fn_recvmmsg(__VA_ARGS__)
#define recvfrom(...) fn_recvfrom(__VA_ARGS__)
#define write(...) fn_write(__VA_ARGS__)
#define writev(...) fn_writev(__VA_ARGS__)
#define send(...) fn_send(__VA_ARGS__)
#define sendmsg(...) fn_sendmsg(__VA_ARGS__)
#define sendmmsg(...) fn_sendmmsg(__VA_ARGS__)
#define sendto(...) fn_sendto(__VA_ARGS__)
#define select(...) fn_select(__VA_ARGS__)
#define pselect(...) fn_pselect(__VA_ARGS__)
#define poll(...) fn_poll(__VA_ARGS__)
#define ppoll(...) fn_ppoll(__VA_ARGS__)
#define epoll_create(...) fn_epoll_create(__VA_ARGS__)
#define epoll_create1(...) fn_epoll_create1(__VA_ARGS__)
#define epoll_ctl(...) fn_epoll_ctl(__VA_ARGS__)
#define epoll_wait(...) fn_epoll_wait(__VA_ARGS__)
#define epoll_pwait(...) fn_epoll_pwait(__VA_ARGS__)
#define socketpair(...) fn_socketpair(__VA_ARGS__)
#define pipe(...) fn_pipe(__VA_ARGS__)
#define open(...) fn_open(__VA_ARGS__)
#define creat(...) fn_creat(__VA_ARGS__)
#define dup(...) fn_dup(__VA_ARGS__)
#define dup2(...) fn_dup2(__VA_ARGS__)
#define clone(...) fn_clone(__VA_ARGS__)
#define fork(...) fn_fork(__VA_ARGS__)
#define vfork(...) fn_vfork(__VA_ARGS__)
#define daemon(...) fn_daemon(__VA_ARGS__)
#define sigaction(...) fn_sigaction(__VA_ARGS__)

// sockperf's renaming around the VMA header.
#define RING_LOGIC_PER_INTERFACE VMA_RING_LOGIC_PER_INTERFACE
#define RING_LOGIC_PER_IP VMA_RING_LOGIC_PER_IP
#define RING_LOGIC_PER_SOCKET VMA_RING_LOGIC_PER_SOCKET
#define RING_LOGIC_PER_USER_ID VMA_RING_LOGIC_PER_USER_ID
#define RING_LOGIC_PER_THREAD VMA_RING_LOGIC_PER_THREAD
#define RING_LOGIC_PER_CORE VMA_RING_LOGIC_PER_CORE
#define RING_LOGIC_PER_CORE_ATTACH_THREADS VMA_RING_LOGIC_PER_CORE_ATTACH_THREADS
#define RING_LOGIC_LAST VMA_RING_LOGIC_LAST
#define ring_logic_t vma_ring_logic_t
#include <mellanox/vma_extra.h>
#undef RING_LOGIC_PER_INTERFACE
#undef RING_LOGIC_PER_IP
#undef RING_LOGIC_PER_SOCKET
#undef RING_LOGIC_PER_USER_ID
#undef RING_LOGIC_PER_THREAD
#undef RING_LOGIC_PER_CORE
#undef RING_LOGIC_PER_CORE_ATTACH_THREADS
#undef RING_LOGIC_LAST
#undef ring_logic_t

// xlio_extra.h's turn: its own enum under the same spellings, renamed to
// XLIO_*.  It builds only if the VMA header left no RING_LOGIC_* or
// ring_logic_t of its own behind.
#define RING_LOGIC_PER_INTERFACE XLIO_RING_LOGIC_PER_INTERFACE
#define RING_LOGIC_PER_SOCKET XLIO_RING_LOGIC_PER_SOCKET
#define RING_LOGIC_LAST XLIO_RING_LOGIC_LAST
#define ring_logic_t xlio_ring_logic_t
typedef enum {
  RING_LOGIC_PER_INTERFACE = 0,
  RING_LOGIC_PER_SOCKET = 10,
  RING_LOGIC_LAST = 32
} ring_logic_t;
#undef RING_LOGIC_PER_INTERFACE
#undef RING_LOGIC_PER_SOCKET
#undef RING_LOGIC_LAST
#undef ring_logic_t
// And a program may use the plain names after both (sockperf does not;
// this shows nothing is left defined).
enum { RING_LOGIC_PER_SOCKET = 99 };
typedef int ring_logic_t;

static_assert(VMA_RING_LOGIC_PER_SOCKET == 10, "renamed enumerator keeps its value");
static_assert(VMA_RING_LOGIC_LAST == 32, "renamed enumerator keeps its value");
static_assert(sizeof(vma_ring_logic_t) == 4, "renamed enum type");
static_assert(sizeof(vma_ring_alloc_logic_attr) == 20, "attr built on the renamed type");
static_assert(XLIO_RING_LOGIC_PER_SOCKET == 10 && RING_LOGIC_PER_SOCKET == 99,
              "the three ring_logic enums coexist");

// What sockperf uses: the slots, the callback, the records.
static vma_recv_callback_retval_t filter_cb(int fd, size_t sz_iov, struct iovec iov[],
                                            struct vma_info_t *info, void *context) {
  (void)fd;
  (void)iov;
  (void)context;
  if (info->struct_sz < sizeof(vma_info_t) || sz_iov == 0) return VMA_PACKET_RECV;
  return VMA_PACKET_DROP;
}

// Steps through the variable-length records of a zero-copy buffer.
static size_t payload_bytes(const vma_packets_t *pkts) {
  size_t total = 0;
  const char *p = reinterpret_cast<const char *>(pkts->pkts);
  for (size_t i = 0; i < pkts->n_packet_num; i++) {
    const vma_packet_t *pkt = reinterpret_cast<const vma_packet_t *>(p);
    for (size_t j = 0; j < pkt->sz_iov; j++) total += pkt->iov[j].iov_len;
    p += sizeof(vma_packet_t) + pkt->sz_iov * sizeof(struct iovec);
  }
  return total;
}

static int completion_fd(const vma_completion_t &c) {
  if (c.events & VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED) return c.listen_fd;
  if ((c.events & VMA_SOCKETXTREME_PACKET) && c.packet.buff_lst && c.packet.buff_lst->len)
    return static_cast<int>(c.user_data);
  return static_cast<int>(c.user_data);
}

// The redirect's targets: getsockopt counts its calls and asks the kernel.
static int redirected_calls;
static int counting_getsockopt(int fd, int level, int optname, void *optval, socklen_t *optlen) {
  redirected_calls++;
  return (getsockopt)(fd, level, optname, optval, optlen);  // parenthesised: the real one
}
getsockopt_fptr_t fn_getsockopt = counting_getsockopt;

int main() {
  int fails = 0;

  // Records: two packets, of 2 iovecs and 1, laid out as the library would.
  alignas(8) unsigned char buf[8 + (16 + 2 * 16) + (16 + 16)] = {};
  vma_packets_t *pkts = reinterpret_cast<vma_packets_t *>(buf);
  pkts->n_packet_num = 2;
  vma_packet_t *first = pkts->pkts;
  first->sz_iov = 2;
  first->iov[0].iov_len = 10;
  first->iov[1].iov_len = 20;
  vma_packet_t *second = reinterpret_cast<vma_packet_t *>(buf + 8 + 16 + 2 * 16);
  second->sz_iov = 1;
  second->iov[0].iov_len = 5;
  size_t bytes = payload_bytes(pkts);
  printf("records walked: %zu payload bytes (want 35)\n", bytes);
  fails += bytes != 35;

  vma_info_t info = {};
  info.struct_sz = sizeof(info);
  struct iovec iov = {buf, 1};
  fails += filter_cb(3, 1, &iov, &info, nullptr) != VMA_PACKET_DROP;

  vma_completion_t comp = {};
  comp.events = VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED;
  comp.listen_fd = 7;
  fails += completion_fd(comp) != 7;

  errno = 0;
  vma_api_t *api = vma_get_api();
  int err = errno;
  printf("vma_get_api() = %p, errno %d, redirected getsockopt calls %d\n", static_cast<void *>(api),
         err, redirected_calls);
  if (redirected_calls != 1) {
    printf("FAIL: vma_get_api() did not go through the program's getsockopt redirect\n");
    fails++;
  }
  if (api != nullptr || err != EBADF) {
    printf("FAIL: without a library vma_get_api() must be NULL with EBADF\n");
    fails++;
  }
  if (api)  // sockperf's six slots (under a library, later tests)
    printf("slots %d\n", !!api->register_recv_callback + !!api->recvfrom_zcopy +
                             !!api->free_packets + !!api->socketxtreme_poll +
                             !!api->get_socket_rings_fds + !!api->socketxtreme_free_vma_packets);
  printf("%s\n", fails ? "FAIL" : "ok");
  return fails ? 1 : 0;
}
