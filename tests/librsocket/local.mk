# The rsocket conformance suite: one GoogleTest binary, parametrised over
# the connection providers (tcp, shm; a provider that is not available shows
# as SKIPPED with the reason).
check_PROGRAMS += rsocket_conformance
TESTS += rsocket_conformance
rsocket_conformance_SOURCES = \
	tests/librsocket/conformance.h \
	tests/librsocket/conformance_util.cc \
	tests/librsocket/connection_test.cc \
	tests/librsocket/options_test.cc \
	tests/librsocket/data_test.cc \
	tests/librsocket/poll_test.cc \
	tests/librsocket/iomap_test.cc \
	tests/librsocket/errno_test.cc \
	tests/librsocket/lifecycle_test.cc \
	tests/librsocket/hostile_test.cc \
	tests/librsocket/shm_hostile_test.cc \
	tests/librsocket/verbs_hostile_test.cc \
	tests/librsocket/config_test.cc \
	tests/librsocket/keepalive_test.cc \
	tests/librsocket/fork_test.cc \
	tests/librsocket/raw_peer.h
rsocket_conformance_LDADD = librsocket.la libslipstream.la $(VERBS_LIBS) $(GTEST_LIBS)
