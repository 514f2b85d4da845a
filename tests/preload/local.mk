# librspreload's tests: the differential suite (one GoogleTest binary run
# plain and preloaded by differential.sh) and Debian programs
# (tests/ext/preload.sh). The binary links nothing of ours: the preload
# alone brings Slipstream in. Fortified, so glibc's _chk calls are made.
check_PROGRAMS += preload_differential_test
preload_differential_test_SOURCES = tests/preload/pair.h tests/preload/differential_test.cc \
	tests/preload/differential_timeout_test.cc tests/preload/differential_splice_test.cc \
	tests/preload/differential_epoll_test.cc tests/preload/differential_ports_test.cc \
	tests/preload/late_fallback_test.cc tests/preload/kernel_tcp_test.cc \
	tests/preload/differential_pass_test.cc
preload_differential_test_CPPFLAGS = $(AM_CPPFLAGS) -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2
preload_differential_test_CXXFLAGS = $(AM_CXXFLAGS) -O2
preload_differential_test_LDADD = $(GTEST_LIBS)
dist_check_SCRIPTS += tests/preload/differential.sh
TESTS += tests/preload/differential.sh
TEST_LIMITS += differential.sh=240
# A non-blocking client and an echo server, used by tests/ext/preload.sh
# and tests/rxe/preload.sh (the late fallback of a non-blocking connect).
EXTRA_DIST += tests/preload/nb_client.py tests/preload/nb_server.py
