// VMA_STATS_FILE: each active socket's counters, as vma_stats -v 3 shows
// them, appended to that file when the socket closes, and at exit for the
// sockets still open (libvma writes its sockets' counters as it destroys
// them, at close and at exit). A socket counts as active once it sent or
// received anything, offloaded or through the kernel, as libvma's does.
// A fork child writes none (its counters start as its parent's).
#pragma once

namespace ss::vma::preload {

struct SocketRecord;

// Names the file from the setting (its first %d the pid), at start. A file
// that cannot be opened: one warning naming it, no report is written.
void open_stats_file();
// Appends the socket's report, once per socket (at its last close, or at
// exit); nothing without the file, a stats block or activity.
void write_socket_stats(SocketRecord& s) noexcept;

}  // namespace ss::vma::preload
