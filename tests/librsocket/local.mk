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
	tests/librsocket/c_edge_test.cc \
	tests/librsocket/lifecycle_test.cc \
	tests/librsocket/hostile_test.cc \
	tests/librsocket/shm_hostile_test.cc \
	tests/librsocket/verbs_hostile_test.cc \
	tests/librsocket/config_test.cc \
	tests/librsocket/keepalive_test.cc \
	tests/librsocket/scale_test.cc \
	tests/librsocket/stopped_listener.h \
	tests/librsocket/stopped_listener.cc \
	tests/librsocket/signal_test.cc \
	tests/librsocket/connect_timeout_test.cc \
	tests/librsocket/limits_test.cc \
	tests/librsocket/fork_test.cc \
	tests/librsocket/fork_util.h \
	tests/librsocket/fork_locks_test.cc \
	tests/librsocket/dgram_test.cc \
	tests/librsocket/dgram_ds_wire_test.cc \
	tests/librsocket/dgram_ds_peers_test.cc \
	tests/librsocket/dgram_verbs_test.cc \
	tests/librsocket/raw_peer.h
# Pure helpers the hostile tests call (core's shm rendezvous name and
# rdma_cm event errno, librsocket's datagram ring, shared-memory sender
# and upstream's datagram headers) are compiled in rather than exported: no program needs them, and
# they hold no state a second copy could split.
rsocket_conformance_SOURCES += \
	src/core/prov/shm/rendezvous.cc \
	src/core/prov/verbs/cm_events.cc \
	src/librsocket/dgram_ring.cc \
	src/librsocket/dgram_shm.cc \
	src/librsocket/dgram_ds_wire.cc \
	src/librsocket/dgram_ds_peers.cc
rsocket_conformance_LDADD = librsocket.la libslipstream.la $(VERBS_LIBS) $(GTEST_LIBS)
