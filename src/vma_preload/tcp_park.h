// A connection a parent closes after a fork (an accept-then-fork server:
// PostgreSQL's postmaster, inetd) waits here on the parent's rings for a
// fork child's first call to take it onto rings of the child's own
// (fork_join_take, Stack::adopt): not the kernel's at once, as a
// connection shared by fork otherwise goes (tcp_repair.h). The parent's
// stack carries it meanwhile (ACKs, data into its window). Untaken after
// kParkMs, or when the process exits, it goes to the kernel socket as
// before, through a duplicate of the program's descriptor kept for it;
// then that duplicate closes, and the kernel's connection lives while a
// child holds the socket.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ss::vma::preload {

struct SocketRecord;

constexpr int kParkMs = 2000;
// Each parked connection holds a descriptor of the program's table: a
// server closing connections faster than this many every 2 s gives the
// rest to the kernel at once, as before.
constexpr size_t kMaxParked = 64;

// close(2) of rec's last descriptor fd after a fork: the connection
// parked (fd duplicated first). False when it cannot be (kMaxParked
// parked already, no duplicate).
bool park_tcp(std::shared_ptr<SocketRecord> rec, int fd);
// The owner's service thread, each second: the parked connections whose
// time ran out (all of them at exit) go to their kernel sockets.
void parked_expire(bool all);
// In a fork child's handler: the parent's parked connections are not the
// child's (their duplicates closed, so no child keeps another's kernel
// socket open; their records kept, never freed, as inherited ones).
void parked_fork_child();
// A fork child asked for record `id`'s kernel socket (fork_share.h): if
// parked, the connection goes there now.
void parked_to_kernel(uint64_t id);
// A fork child's take (fork_join_serve) of parked record `id`: its
// netdev and state (encode_handover's bytes). 0 or -errno (-EBUSY: the
// record is open here still; -ENOENT: not parked, or gone since).
int parked_give(uint64_t id, std::string* ifname, std::vector<uint8_t>* bytes);

}  // namespace ss::vma::preload
