// Descriptors a message passes to another process (SCM_RIGHTS). The
// receiver gets the kernel's file behind each number and none of a
// preload's state, so a face readies its sockets before the send:
// libvma.so hands an offloaded connection to its kernel socket.
#pragma once
#include <sys/socket.h>

#include <functional>

namespace ss::interpose {

// fn(fd) for each descriptor the SCM_RIGHTS messages of m carry; nothing
// where m or its control bytes are not the program's readable memory
// (the kernel's send then says EFAULT).
void for_each_passed_fd(const msghdr* m, const std::function<void(int)>& fn);
// The same over sendmmsg's first vlen messages (at most UIO_MAXIOV).
void for_each_passed_fd(const mmsghdr* v, unsigned int vlen, const std::function<void(int)>& fn);

}  // namespace ss::interpose
