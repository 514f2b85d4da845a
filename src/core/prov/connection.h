// The connection-provider interface: the small set of RDMA-like operations
// the rsocket protocol engine is written against (one-sided writes, writes
// with a 32-bit immediate, completions, connection management with private
// data). Providers register themselves (registry.h): verbs (rdma-core),
// shm (same host), tcp (kernel TCP).
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "core/base/own_fd.h"
#include "core/prov/provider.h"

namespace ss::prov {

// The descriptor numbers a saved connection named, as the image that
// builds it back has them: an exec keeps every number (no entries); a
// connection passed to another process (SCM_RIGHTS) arrives at new ones.
struct Renumber {
  const int* from = nullptr;
  const int* to = nullptr;
  int n = 0;
  int operator()(int fd) const {
    for (int i = 0; i < n; i++)
      if (from[i] == fd) return to[i];
    return fd;
  }
};

// One connection: a queue pair with its completion queue and its CM state.
// The caller serialises calls on one Endpoint (the rsocket engine makes
// them under its socket's lock); a provider locks only against threads of
// its own.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // The name the provider registered under (registry.h), for logs and tests.
  virtual const char* provider_name() const = 0;
  // Final once setup() has returned (a device may decide some).
  virtual uint32_t caps() const = 0;

  // An active endpoint may still be finding its peer (verbs: address and
  // route resolution) when it is created: 0 once setup() may run, -EAGAIN
  // meanwhile (wait with arm()/event_fd() as for completions), else -errno.
  virtual int resolve_progress() { return 0; }

  // Queue sizes: called once before connect/accept; attr gets granted values.
  virtual int setup(EndpointAttr* attr) = 0;
  // Memory the peer may write (kAccessRemoteWrite) is exposed to this
  // connection only; the receiver checks every key, offset and length.
  virtual int reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) = 0;
  virtual void dereg_mr(MemoryRegion* mr) = 0;

  // Connection management. connect/accept start the exchange of private
  // data; cm_progress reports its outcome without blocking (-EAGAIN: none yet).
  virtual int connect(const void* pdata, size_t len) = 0;
  virtual int accept(const void* pdata, size_t len) = 0;
  virtual int reject() = 0;
  virtual int cm_progress(CmEvent* ev) = 0;
  virtual const uint8_t* peer_private_data(size_t* len) const = 0;
  // Positive errno behind a kRejected/kError event (ECONNREFUSED, ETIMEDOUT...).
  virtual int cm_error() const = 0;
  // Flushes the queue pair and tells the peer; idempotent.
  virtual void disconnect() = 0;
  // The connecting side under kCapActiveSpeaksFirst, right after its first
  // message: returns (bounded) once the peer has taken it, doing what the
  // transport needs for that (verbs: siw can strand it unread).
  virtual void confirm_first_message() {}

  // Data path. post_send returns kPostDone when the work request finished
  // at post time (the bytes are where they were going): no completion
  // follows for it, the caller accounts for it at once.
  virtual int post_send(const SendWr& wr) = 0;
  virtual int post_recv(uint64_t wr_id) = 0;
  virtual int poll_cq(Completion* wc, int max) = 0;

  // Waiting: arm(), then poll(2) event_fd() for event_mask(); after poll
  // returns (for whatever reason) ack_events() exactly once, then run
  // poll_cq()/cm_progress() again. arm() returns 1 when work is already
  // pending and the caller must not sleep (then no ack_events()). Several
  // threads may wait at once.
  virtual int arm() = 0;
  virtual int event_fd() const = 0;
  virtual short event_mask() const = 0;
  virtual void ack_events() = 0;

  // Socket names of the connection (AF_INET/AF_INET6), for rgetsockname/rgetpeername.
  virtual int local_name(sockaddr_storage* addr, socklen_t* len) const = 0;
  virtual int peer_name(sockaddr_storage* addr, socklen_t* len) const = 0;

  // Optional: what only the rsocket face asks for. The defaults suit a
  // provider without the feature.

  // The fd that names an accepted connection (its rsocket descriptor), when
  // the provider's transport has one; -1: none (the face makes its own), and
  // always for active endpoints, which keep the descriptor the application made.
  virtual int descriptor_fd() const { return -1; }
  // The kernel stream the transport runs on (tcp, shm), -1: none. A vfork
  // child keeps it open for an exec that carries the connection.
  virtual int stream_fd() const { return -1; }

  // Closes the rsocket's descriptor `fd` (the kernel socket it was named
  // by), in whatever way keeps data already sent deliverable.
  virtual void close_descriptor(int fd) { ::close(fd); }

  // Places incoming writes even while the application is not calling in
  // (memory read without notification, e.g. riomap targets); providers
  // with kCapAsyncPlace only.
  virtual int set_async_progress(bool on) { return on ? -ENOTSUP : 0; }

  // The connection's path records as struct ibv_path_data entries (SOL_RDMA
  // RDMA_ROUTE); *len in: buffer size, out: bytes written. Providers
  // without kCapRoute have none.
  virtual int route(void* buf, size_t* len) const {
    (void)buf;
    (void)len;
    return -ENOTSUP;
  }

  // A fork sibling carries the connection on from this process's state
  // (librsocket's hand-over, when the process that moved it last exits or
  // closes its copy): the endpoint's own state appended to `out`, false
  // when it cannot be handed over now (work under way that only this
  // process holds: queued sends, a frame half read). load_handover takes
  // it in a process whose copy of this endpoint was made before the fork
  // that brought both (the same addresses). Optional: none by default.
  virtual bool save_handover(std::vector<uint8_t>* out) const {
    (void)out;
    return false;
  }
  virtual bool load_handover(const uint8_t* in, size_t len) {
    (void)in;
    (void)len;
    return false;
  }

  // The same connection in a new image of this process (librsocket's
  // exec hand-over; ConnectionOps::restore builds it back). First what
  // must be done with the peer (shm: both ends stop using each other's
  // memory), a step a call, the caller progressing completions between
  // steps: 0 once done, -EAGAIN while the peer has yet to answer, else
  // -errno. Then the state restore needs, and in `keep` the descriptors
  // it names that the exec must leave open; false when this endpoint
  // cannot go on there. Optional: nothing crosses by default.
  virtual int prepare_exec() { return 0; }
  virtual bool save_for_exec(std::vector<uint8_t>* out, std::vector<int>* keep) const {
    (void)out;
    (void)keep;
    return false;
  }
  // After such an exec, before any memory is registered: keys up to
  // `key` are the peer's from the image before (alias_mr), none of the
  // new registrations may take one.
  virtual int reserve_keys(uint32_t key) {
    (void)key;
    return -ENOTSUP;
  }
  // Then: writes the peer still makes by `wire_key` and
  // `wire_addr` (memory of the image before) land in `now`, registered
  // with this endpoint since, for `len` bytes at most.
  virtual int alias_mr(const MemoryRegion& now, uint32_t wire_key, uint64_t wire_addr, size_t len) {
    (void)now;
    (void)wire_key;
    (void)wire_addr;
    (void)len;
    return -ENOTSUP;
  }

  // In a fork child, from the owning socket's fork_child (one thread,
  // before any call): a lock a thread of the parent held at the fork (a
  // provider thread of its own, another thread's call) is inherited held
  // and nobody here releases it; such locks are made free, and a provider
  // thread, which the child does not have, is forgotten (never joined nor
  // told anything: it is the parent's). Never called for an endpoint the
  // child cannot use (verbs: its calls are never made there). Optional.
  virtual void fork_child() {}

  // In a fork child's handler, for a connection the program had closed
  // before the fork (its close deferred to another thread's call, which
  // the child lacks): closes this process's descriptors of it by the
  // system call (own_fd.h), `fd` (the rsocket's) among them, and nothing
  // else: no message to the peer, no lock, no memory given back. The
  // endpoint is never called nor destroyed in this process afterwards.
  // Optional: the default closes `fd` alone.
  virtual void drop_in_fork_child(int fd) { own_close(fd); }
};

// A passive endpoint factory bound to a listening rsocket.
class Listener {
 public:
  virtual ~Listener() = default;
  // Readable when get_request() may return a connection request.
  virtual int fd() const = 0;
  // A request whose peer private data is ready (-EAGAIN: none; -EMFILE or
  // -ENFILE: a connection waits that no descriptor is left to take).
  virtual int get_request(std::unique_ptr<Endpoint>* ep) = 0;
  // In a fork child, before it serves the inherited listener: makes
  // private what fork left shared but one process must own (an epoll set
  // another process would change under it), and drops the child's copies
  // of requests under way, which stay the parent's. 0; 1 when the child
  // serves only part of it (a set whose members the child cannot use are
  // left to the parent, neither used nor destroyed here); -ENOTSUP when
  // the listener cannot serve from a child at all (the caller must then
  // neither use nor destroy it: its objects are the parent's); else -errno.
  virtual int fork_child() { return -ENOTSUP; }
};

// Where an active connection goes.
struct Peer {
  int sock;  // the rsocket's kernel stream socket: non-blocking, possibly bound
  const sockaddr* dst;
  socklen_t len;
  const void* route = nullptr;  // RDMA_ROUTE path records given by the application
  size_t route_len = 0;
  // Nothing on `sock`'s stream to the port it names unless the peer is
  // known to speak rsockets (librspreload: the port may be a plain TCP
  // program's, which must not see a hello).
  bool off_stream = false;
};

// A listening rsocket being set up (selection.h: create_listener). Every
// provider that listens adds its own listener; they listen in preference
// order, so one that must claim the port before the kernel socket listens
// (iWARP's rdma_cm) ranks above tcp, whose listener is that socket.
struct ListenSite {
  int sock;  // bound, not listening yet
  int backlog;
  // The port is held in the kernel's TCP port space by another provider:
  // `sock` must not listen.
  bool kernel_port_taken = false;
  // `sock` is a program's (librspreload: its own listen makes it the
  // kernel's listener): a provider must not listen on it, only beside it.
  bool off_stream = false;
};

// A connection provider's entry in the registry (registry.h).
struct ConnectionOps {
  // SLIPSTREAM_PROVIDER=auto walks the providers from the highest
  // preference down and takes the first whose probe accepts the peer and
  // whose create succeeds.
  int preference;
  // 0 when this provider may serve a connection to the peer, else -errno.
  // `named`: the user chose this provider, so say why not (a warning);
  // otherwise auto is asking, quietly.
  int (*probe)(const Peer& peer, bool named);
  int (*create)(const Peer& peer, std::unique_ptr<Endpoint>* out);
  // This provider's listener for `site`, or none (*out empty) where it
  // cannot serve one but rlisten should go on; -errno fails rlisten.
  int (*listen)(ListenSite* site, bool named, std::unique_ptr<Listener>* out);
  // Whether connections can follow path records (RDMA_ROUTE) on this host;
  // nullptr: never.
  bool (*can_route)();
  // Listens whichever provider is named: its listener is the rsocket's own
  // kernel socket, which listens anyway. Such a provider carries the
  // connection on that socket's stream, so an off-stream caller skips it.
  bool listens_always;
  // An established connection on descriptor `fd` (its transport, left
  // open across exec or passed) built back from what
  // Endpoint::save_for_exec wrote in the image before, the numbers it
  // names renumbered; nullptr: this provider's cannot cross exec.
  int (*restore)(int fd, const uint8_t* state, size_t len, const Renumber& renumber,
                 std::unique_ptr<Endpoint>* out) = nullptr;
};

}  // namespace ss::prov
