// core/base/exception_errno.h: the errno each exception stands for at a
// C edge.
#include "core/base/exception_errno.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace ss {
namespace {

int errno_of(const std::function<void()>& thrower) {
  try {
    thrower();
  } catch (...) {
    return current_exception_errno();
  }
  return 0;
}

TEST(ExceptionErrno, EachExceptionItsErrno) {
  EXPECT_EQ(errno_of([] { throw std::bad_alloc(); }), ENOMEM);
  EXPECT_EQ(errno_of([] { std::vector<int>().reserve(std::vector<int>().max_size() + 1); }),
            ENOMEM);  // std::length_error
  EXPECT_EQ(errno_of([] { throw std::system_error(EAGAIN, std::generic_category()); }), EAGAIN);
  EXPECT_EQ(errno_of([] { throw std::system_error(0, std::generic_category()); }), EIO);
  EXPECT_EQ(errno_of([] { throw std::runtime_error("a bug"); }), EIO);
  EXPECT_EQ(errno_of([] { throw 42; }), EIO);
}

}  // namespace
}  // namespace ss
