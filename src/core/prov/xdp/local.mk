# The xdp ring provider (AF_XDP), built when configure found libxdp, libbpf,
# clang and bpftool. Our steering program is compiled for the BPF target and
# embedded as a bpftool skeleton header (generated in the build tree).
#
# A library of its own, not part of libslipstream: only what uses packet
# rings links it (libvma.so and the ring tests), so rsocket
# programs and everything preloaded with librspreload never load libxdp,
# libbpf, libelf and zlib. Its Registration runs when it is loaded, so a
# program links its objects whole (as the tests link core's).
EXTRA_DIST += src/core/prov/xdp/steer.bpf.c src/core/prov/xdp/steer_abi.h
if HAVE_XDP
noinst_LTLIBRARIES += libslipstream_xdp.la
libslipstream_xdp_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/src $(XDP_CFLAGS)
libslipstream_xdp_la_CXXFLAGS = $(libslipstream_core_la_CXXFLAGS)
libslipstream_xdp_la_SOURCES = \
	src/core/prov/xdp/steer_abi.h \
	src/core/prov/xdp/xdp_device.h \
	src/core/prov/xdp/xdp_device.cc \
	src/core/prov/xdp/xdp_family.h \
	src/core/prov/xdp/xdp_family.cc \
	src/core/prov/xdp/xdp_join.h \
	src/core/prov/xdp/xdp_join.cc \
	src/core/prov/xdp/xsk_kernel.h \
	src/core/prov/xdp/xdp_queue.h \
	src/core/prov/xdp/xdp_queue.cc \
	src/core/prov/xdp/xdp_steering.h \
	src/core/prov/xdp/xdp_steering.cc \
	src/core/prov/xdp/xdp_provider.cc
libslipstream_xdp_la_LIBADD = $(XDP_LIBS)
nodist_libslipstream_xdp_la_SOURCES = src/core/prov/xdp/steer.skel.h
BUILT_SOURCES = src/core/prov/xdp/steer.skel.h
# BUILT_SOURCES covers `make all` and `make check` only; a named target
# (make xdp_ring_tests) in a fresh tree needs the header first too. (A
# rule naming the object itself would replace automake's compile rule.)
$(libslipstream_xdp_la_OBJECTS): src/core/prov/xdp/steer.skel.h
CLEANFILES = src/core/prov/xdp/steer.skel.h src/core/prov/xdp/steer.bpf.o

src/core/prov/xdp/steer.bpf.o: $(top_srcdir)/src/core/prov/xdp/steer.bpf.c \
		$(top_srcdir)/src/core/prov/xdp/steer_abi.h
	$(AM_V_GEN)$(MKDIR_P) $(@D) && \
	$(BPF_CLANG) -O2 -g -target bpf $(BPF_CPPFLAGS) -Wall -Wextra $(WERROR_FLAGS) \
		-c $(top_srcdir)/src/core/prov/xdp/steer.bpf.c -o $@
src/core/prov/xdp/steer.skel.h: src/core/prov/xdp/steer.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton $< name ss_steer > $@.tmp && mv $@.tmp $@
endif
