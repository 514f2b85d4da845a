# Tests: unit tests of core, the rsocket conformance suite (parametrised
# over providers), and scripts driving external programs.
check_PROGRAMS += core_unit_tests
TESTS += core_unit_tests

# Every TESTS entry runs under run-with-limit.sh: a hang fails as "TIMEOUT
# after N s: NAME" instead of stalling the run. TEST_LIMITS gives a test
# (by basename) several times its duration on a busy 2-core machine
# (core_unit_tests ~1 s, rsocket_conformance ~2 min), TEST_LIMIT_DEFAULT
# the rest; sanitizer runs raise TEST_LIMIT_SCALE (`make check
# TEST_LIMIT_SCALE=3`).
TEST_LIMIT_DEFAULT = 300
TEST_LIMITS = core_unit_tests=120 rsocket_conformance=600 xdp_ring_tests=120 net_netns_tests=300 \
	udp_ring_tests=120
TEST_LIMIT_SCALE = 1
LOG_COMPILER = bash $(top_srcdir)/tests/run-with-limit.sh
# The same for automake's *.test suffix rule (a test dropped in by hand).
TEST_LOG_COMPILER = $(LOG_COMPILER)
AM_TESTS_ENVIRONMENT = TEST_LIMIT_DEFAULT='$(TEST_LIMIT_DEFAULT)' \
	TEST_LIMITS='$(TEST_LIMITS)' TEST_LIMIT_SCALE='$(TEST_LIMIT_SCALE)'; \
	export TEST_LIMIT_DEFAULT TEST_LIMITS TEST_LIMIT_SCALE;
EXTRA_DIST += tests/run-with-limit.sh tests/tsan.supp tests/skips.sh

include tests/librsocket/local.mk
include tests/ext/local.mk
include tests/preload/local.mk
include tests/rxe/local.mk
include tests/xdp/local.mk
include tests/net/local.mk
include tests/fuzz/local.mk
include tests/vma/local.mk
EXTRA_DIST += tests/common/stderr_capture.h tests/common/rxe_counter.h
