// Descriptor -> entry map of the process, shared by every face: each entry
// carries a kind tag (an rsocket, a socket a preload offloads, a kernel
// descriptor passed through) and the face's object for it.
//
// Lookups take no lock: slots are atomic pointers read inside an RCU
// read-side section (liburcu-bp), just long enough to copy the shared
// reference; a remove waits out a grace period before dropping the
// table's reference, so a concurrent lookup never touches a freed slot and
// a call in progress keeps its object alive. Each thread remembers its
// last few lookups (weak references and the table's generation, which
// every insert and remove bumps): a thread calling on the same
// descriptors repeatedly skips the table.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/base/api.h"
#include "core/base/pollable.h"

namespace ss {

// Each kind names one object type, agreed by the faces that use it.
enum class FdKind : uint8_t {
  kNone = 0,          // not in the table
  kRsocket = 1,       // ss::rs::Socket
  kRspreloadTcp = 2,  // ss::preload::Entry: librspreload's TCP socket, not an rsocket (yet)
  kKernel = 3,        // a kernel descriptor a preload passes through (object may be null)
  kRsocketDgram = 4,  // ss::rs::DgramSocket (a datagram rsocket)
  kVmaSocket = 5,     // ss::vma::preload::SocketRecord: a socket libvma.so decided on
  // ss::rs::Socket whose librspreload connect failed after EINPROGRESS: its
  // kernel socket now connects over TCP; librspreload makes the descriptor
  // the kernel's at its next call on it.
  kRsocketFallback = 6,
};

class FdTable {
 public:
  SS_API static FdTable& instance();  // the process's table
  // The table once instance() made it, else nullptr: for a caller that
  // must not allocate (a raw close inside malloc's own start-up).
  SS_API static FdTable* if_made();
  FdTable();   // (tests: a table of their own)
  ~FdTable();  // with no lookup or remove still running

  // Sets fd's entry, replacing any (a descriptor the kernel reused).
  // -ENOMEM when the descriptor is beyond what the table tracks.
  // `pollable`: the object as a Pollable (poll_mixed waits on it), or null.
  SS_API int insert(int fd, FdKind kind, std::shared_ptr<void> object,
                    Pollable* pollable = nullptr);
  // An object that implements Pollable is entered as one.
  template <class T>
  int insert(int fd, FdKind kind, std::shared_ptr<T> object) {
    Pollable* p = nullptr;
    if constexpr (std::is_base_of_v<Pollable, T>) p = object.get();
    return insert(fd, kind, std::shared_ptr<void>(std::move(object)), p);
  }
  // Sets fd's entry only while it is still (`from`, `expected`): a thread
  // changing an entry's kind must not bring back one that a close removed
  // meanwhile. 0, or -ESTALE (the entry changed; nothing done).
  SS_API int replace(int fd, FdKind from, const void* expected, FdKind to,
                     std::shared_ptr<void> object, Pollable* pollable = nullptr);
  template <class T>
  int replace(int fd, FdKind from, FdKind to, std::shared_ptr<T> object) {
    Pollable* p = nullptr;
    if constexpr (std::is_base_of_v<Pollable, T>) p = object.get();
    const void* expected = object.get();
    return replace(fd, from, expected, to, std::shared_ptr<void>(std::move(object)), p);
  }
  SS_API FdKind kind(int fd) const;
  // fd's object when its entry is of `kind`; null otherwise.
  SS_API std::shared_ptr<void> get_object(int fd, FdKind kind) const;
  // fd's object as a Pollable, whatever its kind; null when it is none.
  SS_API std::shared_ptr<Pollable> get_pollable(int fd) const;
  template <class T>
  std::shared_ptr<T> get(int fd, FdKind kind) const {
    return std::static_pointer_cast<T>(get_object(fd, kind));
  }
  // The entries of `kind` now, by descriptor (a snapshot: the table may
  // change meanwhile). For walks at exit; not a fast path.
  SS_API std::vector<std::pair<int, std::shared_ptr<void>>> objects_of(FdKind kind) const;
  // Removes fd's entry if it is of `kind` and hands back its object:
  // 0, or -EBADF (no entry, or one of another kind, which stays).
  SS_API int remove_object(int fd, FdKind kind, std::shared_ptr<void>* object);
  template <class T>
  std::shared_ptr<T> remove(int fd, FdKind kind) {
    std::shared_ptr<void> o;
    remove_object(fd, kind, &o);
    return std::static_pointer_cast<T>(std::move(o));
  }

  // While one lives on this thread, a remove or replace waits for no
  // grace period: the caller gets a copy of the object, and the nodes are
  // freed after one when the outermost ends. For a caller holding a lock
  // a signal handler may want (on a thread inside a read, whose end that
  // grace period would wait for). Its end is not signal-safe: held with
  // the program's signals off (SignalsHeld) around it.
  class SS_API RetireLater {
   public:
    RetireLater();
    ~RetireLater();
    RetireLater(const RetireLater&) = delete;
    RetireLater& operator=(const RetireLater&) = delete;
  };

 private:
  // Two levels, allocated on first use and never freed while the table
  // lives: no reader ever sees a chunk go away.
  static constexpr int kChunkBits = 10;
  static constexpr int kChunkSize = 1 << kChunkBits;
  static constexpr int kMaxFds = 1 << 20;
  struct Node {
    FdKind kind;
    std::shared_ptr<void> object;
    Pollable* pollable;          // the object as a Pollable, or null
    Node* limbo_next = nullptr;  // retired by a signal handler (retire)
  };
  struct Expected {
    FdKind kind;
    const void* object;
  };
  // insert and replace: the entry set, if `expect` (when given) still holds.
  int put(int fd, FdKind kind, std::shared_ptr<void> object, Pollable* pollable,
          const Expected* expect);
  struct Chunk {
    std::atomic<Node*> slots[kChunkSize];
  };
  // n, out of its slot, freed once no lookup can hold it; its object
  // into *object first (when given), with those of nodes retired in
  // signal handlers before.
  void retire(Node* n, std::shared_ptr<void>* object);
  void push_limbo(Node* n);
  FdTable(const FdTable&) = delete;
  FdTable& operator=(const FdTable&) = delete;
  std::atomic<Node*>* slot(int fd) const;
  // fd's entry as the table holds it (an RCU read): its object (null
  // when none), *kind and *pollable.
  std::shared_ptr<void> read_slot(int fd, FdKind* kind, Pollable** pollable) const;
  // use(fd's node, or null) inside one RCU read, the node from this
  // thread's lookup cache when still current.
  template <typename Use>
  auto with_node(int fd, Use use) const -> decltype(use(nullptr));

  // In a fork child (the process table's atfork handler): each entry's
  // Pollable::fork_child, and write_mu_ made free.
  void fork_child();

  std::mutex write_mu_;  // insert/remove
  std::atomic<uint64_t> gen_{0};
  std::atomic<Node*> limbo_{nullptr};  // retired by signal handlers (retire)
  std::atomic<Chunk*> chunks_[kMaxFds / kChunkSize] = {};
};

}  // namespace ss
