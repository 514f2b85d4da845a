// Which sanitizer a test program is built with, for tests whose behaviour
// a sanitizer's runtime changes: gcc says __SANITIZE_*__, clang
// __has_feature. SS_TEST_ASAN and SS_TEST_TSAN are 1 or undefined.
#ifndef SS_TESTS_COMMON_SANITIZERS_H
#define SS_TESTS_COMMON_SANITIZERS_H

#if defined(__SANITIZE_ADDRESS__)
#define SS_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define SS_TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(SS_TEST_ASAN)
#define SS_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(SS_TEST_TSAN)
#define SS_TEST_TSAN 1
#endif
#endif

#endif  // SS_TESTS_COMMON_SANITIZERS_H
