# libFuzzer targets (tests/fuzz/README.md): one per parser, each driving
# the real parsing code. They need clang's -fsanitize=fuzzer, and the
# library code they reach instrumented (fuzzer-no-link, ASan, UBSan), so
# they live in a build directory of their own, configured with
# --enable-fuzzing: from any other build directory `make fuzz` configures
# ./fuzz-build (clang, -Werror) and builds them there. `make fuzz-smoke` runs
# each for FUZZ_SMOKE_S seconds, `make fuzz-long FUZZ_S=600` for FUZZ_S; both
# start from the seed corpus copied to a temporary directory and fail on any
# crash, leak or sanitizer report.
FUZZ_TARGETS = fuzz_config fuzz_tcp_stream fuzz_shm_stream fuzz_rsocket \
	fuzz_preload_rules fuzz_dgram fuzz_net_frame fuzz_udp_stack fuzz_vma_stats \
	fuzz_vma_conf fuzz_tcp_segment fuzz_tcp_connection fuzz_tcp_handover
EXTRA_PROGRAMS = $(FUZZ_TARGETS)
# Like core_unit_tests: every object of core (and of librsocket), not an
# archive's pick, so the providers' static registrations are all there.
FUZZ_LINK_OBJECTS = $(libslipstream_core_la_OBJECTS) $(librsocket_la_OBJECTS)
FUZZ_LINK_FLAGS = -fsanitize=fuzzer $(FUZZ_LINK_OBJECTS) $(AM_LDFLAGS)
FUZZ_LINK_LIBS = $(libslipstream_core_la_LIBADD)

fuzz_config_SOURCES = tests/fuzz/fuzz_config.cc
# With libvmacompat's objects too: the VMA table and its VMA_SPEC source.
fuzz_config_LDFLAGS = $(FUZZ_LINK_FLAGS) $(libvmacompat_la_OBJECTS)
fuzz_config_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_config_DEPENDENCIES = $(FUZZ_LINK_OBJECTS) $(libvmacompat_la_OBJECTS)
fuzz_tcp_stream_SOURCES = tests/fuzz/fuzz_tcp_stream.cc tests/fuzz/stream_peer.h
fuzz_tcp_stream_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_tcp_stream_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_tcp_stream_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
fuzz_shm_stream_SOURCES = tests/fuzz/fuzz_shm_stream.cc tests/fuzz/stream_peer.h
fuzz_shm_stream_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_shm_stream_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_shm_stream_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
fuzz_rsocket_SOURCES = tests/fuzz/fuzz_rsocket.cc tests/fuzz/stream_peer.h
fuzz_rsocket_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_rsocket_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_rsocket_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
fuzz_preload_rules_SOURCES = tests/fuzz/fuzz_preload_rules.cc
fuzz_preload_rules_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_preload_rules_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_preload_rules_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
fuzz_dgram_SOURCES = tests/fuzz/fuzz_dgram.cc
fuzz_dgram_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_dgram_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_dgram_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
fuzz_net_frame_SOURCES = tests/fuzz/fuzz_net_frame.cc
fuzz_net_frame_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_net_frame_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_net_frame_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
# The stack over the unit tests' loopback ring provider (not shipped).
fuzz_udp_stack_SOURCES = tests/fuzz/fuzz_udp_stack.cc tests/core/loopback_ring.cc \
	tests/core/loopback_ring.h
fuzz_udp_stack_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_udp_stack_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_udp_stack_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
# core/net/tcp's header and options parsers.
fuzz_tcp_segment_SOURCES = tests/fuzz/fuzz_tcp_segment.cc
fuzz_tcp_segment_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_tcp_segment_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_tcp_segment_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
# One core/net/tcp connection fed hostile segments, calls and clock steps.
fuzz_tcp_connection_SOURCES = tests/fuzz/fuzz_tcp_connection.cc tests/core/tcp_room_sink.h \
	tests/fuzz/fuzz_pool.h
fuzz_tcp_connection_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_tcp_connection_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_tcp_connection_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
# A connection's handover between processes, decoded and carried on.
fuzz_tcp_handover_SOURCES = tests/fuzz/fuzz_tcp_handover.cc tests/core/tcp_room_sink.h \
	tests/fuzz/fuzz_pool.h
fuzz_tcp_handover_LDFLAGS = $(FUZZ_LINK_FLAGS)
fuzz_tcp_handover_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_tcp_handover_DEPENDENCIES = $(FUZZ_LINK_OBJECTS)
# The vma_stats reader needs nothing of core: its own files only.
fuzz_vma_stats_SOURCES = tests/fuzz/fuzz_vma_stats.cc \
	src/libvmacompat/stats_proc.cc \
	src/libvmacompat/stats_reader.cc \
	src/libvmacompat/stats_format.cc
fuzz_vma_stats_LDFLAGS = -fsanitize=fuzzer $(AM_LDFLAGS)
# libvma.conf and add_conf_rule: libvmacompat's objects beside core's.
FUZZ_VMA_OBJECTS = $(libslipstream_core_la_OBJECTS) $(libvmacompat_la_OBJECTS)
fuzz_vma_conf_SOURCES = tests/fuzz/vma_conf_fuzz.cc
fuzz_vma_conf_LDFLAGS = -fsanitize=fuzzer $(FUZZ_VMA_OBJECTS) $(AM_LDFLAGS)
fuzz_vma_conf_LDADD = $(FUZZ_LINK_LIBS)
EXTRA_fuzz_vma_conf_DEPENDENCIES = $(FUZZ_VMA_OBJECTS)

FUZZ_SMOKE_S = 15
FUZZ_S = 600
FUZZ_RUN = bash $(top_srcdir)/tests/fuzz/run.sh $(top_srcdir)/tests/fuzz
if FUZZING
FUZZ_BIN_DIR = $(abs_top_builddir)
fuzz: $(FUZZ_TARGETS)
else
FUZZ_BIN_DIR = $(abs_top_builddir)/fuzz-build
fuzz:
	@mkdir -p fuzz-build && cd fuzz-build && \
	{ test -f Makefile || $(abs_top_srcdir)/configure -q CC=clang CXX=clang++ \
	  --enable-fuzzing --enable-werror; } && $(MAKE) fuzz
endif
fuzz-smoke: fuzz
	$(FUZZ_RUN) $(FUZZ_BIN_DIR) $(FUZZ_SMOKE_S) $(FUZZ_TARGETS)
fuzz-long: fuzz
	$(FUZZ_RUN) $(FUZZ_BIN_DIR) $(FUZZ_S) $(FUZZ_TARGETS)
# Line coverage (llvm-cov) of each target's parser files over a corpus
# (FUZZ_CORPUS: the seeds; a long run's FUZZ_KEEP directory says more):
# fuzz-cov/ holds the targets built with clang's source-based coverage.
FUZZ_CORPUS = $(abs_top_srcdir)/tests/fuzz/corpus
fuzz-coverage:
	@mkdir -p fuzz-cov && cd fuzz-cov && \
	{ test -f Makefile || $(abs_top_srcdir)/configure -q CC=clang CXX=clang++ --enable-fuzzing \
	  CXXFLAGS='-O1 -g -fprofile-instr-generate -fcoverage-mapping' \
	  LDFLAGS=-fprofile-instr-generate; } && $(MAKE) $(FUZZ_TARGETS)
	bash $(top_srcdir)/tests/fuzz/coverage.sh $(abs_top_builddir)/fuzz-cov $(FUZZ_CORPUS) \
	  $(FUZZ_TARGETS)
.PHONY: fuzz fuzz-smoke fuzz-long fuzz-coverage
EXTRA_DIST += tests/fuzz
