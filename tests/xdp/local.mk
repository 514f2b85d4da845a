# The xdp ring provider over veth between two namespaces the tests make and
# remove. Needs root (exit 77, skipped, otherwise). Linked with core's
# objects and the provider's, as core_unit_tests is with core's (see
# Makefile.am): whole objects, so the provider's Registration runs.
if HAVE_XDP
check_PROGRAMS += xdp_ring_tests
TESTS += xdp_ring_tests
xdp_ring_tests_SOURCES = \
	tests/common/child_reaper.h \
	tests/common/netns_pair.h \
	tests/common/netns_pair.cc \
	tests/xdp/xdp_ring_test.cc
# Another program to attach first: our own object file.
xdp_ring_tests_CPPFLAGS = $(libslipstream_xdp_la_CPPFLAGS) \
	-DSS_STEER_OBJ='"$(abs_top_builddir)/src/core/prov/xdp/steer.bpf.o"'
xdp_ring_tests_LDFLAGS = $(libslipstream_core_la_OBJECTS) \
	$(libslipstream_xdp_la_OBJECTS) $(AM_LDFLAGS)
EXTRA_xdp_ring_tests_DEPENDENCIES = $(libslipstream_core_la_OBJECTS) \
	$(libslipstream_xdp_la_OBJECTS)
xdp_ring_tests_LDADD = $(libslipstream_core_la_LIBADD) \
	$(libslipstream_xdp_la_LIBADD) -lgtest $(PTHREAD_LIBS)
endif

# core/net's stacks on the xdp provider's rings (tests/xdp/ring_rig.h), in
# namespaces as above: the UDP endpoint layer (core/net/udp_*), and
# core/net/tcp's Stack against Linux's TCP in the other namespace. Root
# only (exit 77 otherwise). Both link as xdp_ring_tests does.
if HAVE_XDP
RING_RIG_SOURCES = tests/common/child_reaper.h tests/common/netns_pair.h tests/common/netns_pair.cc tests/xdp/ring_rig.h
RING_RIG_OBJECTS = $(libslipstream_core_la_OBJECTS) $(libslipstream_xdp_la_OBJECTS)
RING_RIG_LIBS = $(libslipstream_core_la_LIBADD) $(libslipstream_xdp_la_LIBADD) -lgtest \
	$(PTHREAD_LIBS)
check_PROGRAMS += udp_ring_tests tcp_ring_tests
TESTS += udp_ring_tests tcp_ring_tests
udp_ring_tests_SOURCES = $(RING_RIG_SOURCES) tests/xdp/udp_ring_test.cc
udp_ring_tests_CPPFLAGS = $(libslipstream_xdp_la_CPPFLAGS)
udp_ring_tests_LDFLAGS = $(RING_RIG_OBJECTS) $(AM_LDFLAGS)
EXTRA_udp_ring_tests_DEPENDENCIES = $(RING_RIG_OBJECTS)
udp_ring_tests_LDADD = $(RING_RIG_LIBS)
tcp_ring_tests_SOURCES = $(RING_RIG_SOURCES) tests/xdp/tcp_ring_test.cc
# Loss on the wire from b (tests/xdp/lose.bpf.c), compiled as the
# steering program is.
tcp_ring_tests_CPPFLAGS = $(libslipstream_xdp_la_CPPFLAGS) \
	-DSS_LOSE_OBJ='"$(abs_top_builddir)/tests/xdp/lose.bpf.o"'
EXTRA_DIST += tests/xdp/lose.bpf.c
CLEANFILES += tests/xdp/lose.bpf.o
$(tcp_ring_tests_OBJECTS): tests/xdp/lose.bpf.o
tests/xdp/lose.bpf.o: $(top_srcdir)/tests/xdp/lose.bpf.c
	$(AM_V_GEN)$(MKDIR_P) $(@D) && \
	$(BPF_CLANG) -O2 -g -target bpf $(BPF_CPPFLAGS) -Wall -Wextra $(WERROR_FLAGS) -c $< -o $@
tcp_ring_tests_LDFLAGS = $(RING_RIG_OBJECTS) $(AM_LDFLAGS)
EXTRA_tcp_ring_tests_DEPENDENCIES = $(RING_RIG_OBJECTS)
tcp_ring_tests_LDADD = $(RING_RIG_LIBS)
endif
