# librsocket.so: the rsocket API (RDMACM_1.0 symbols) over libslipstream.
lib_LTLIBRARIES += librsocket.la
librsocket_la_SOURCES = \
	src/librsocket/wire.h \
	src/librsocket/settings.h \
	src/librsocket/settings.cc \
	src/librsocket/socket.h \
	src/librsocket/status_flags.h \
	src/librsocket/socket.cc \
	src/librsocket/signal_probe.h \
	src/librsocket/signal_probe.cc \
	src/librsocket/conn_buffer.h \
	src/librsocket/conn_buffer.cc \
	src/librsocket/close.cc \
	src/librsocket/exit_close.cc \
	src/librsocket/fork.h \
	src/librsocket/fork.cc \
	src/librsocket/handover_state.h \
	src/librsocket/handover.cc \
	src/librsocket/exec_handover.cc \
	src/librsocket/exec_listener.cc \
	src/librsocket/engine.cc \
	src/librsocket/data.cc \
	src/librsocket/iomap.cc \
	src/librsocket/dgram_wire.h \
	src/librsocket/dgram_ds_wire.h \
	src/librsocket/dgram_ds_wire.cc \
	src/librsocket/dgram_ds_peers.h \
	src/librsocket/dgram_ds_peers.cc \
	src/librsocket/dgram_verbs.h \
	src/librsocket/dgram_verbs.cc \
	src/librsocket/dgram_deliver.h \
	src/librsocket/dgram_socket.h \
	src/librsocket/dgram_socket.cc \
	src/librsocket/dgram_ring.h \
	src/librsocket/dgram_ring.cc \
	src/librsocket/dgram_shm.h \
	src/librsocket/dgram_shm.cc \
	src/librsocket/dgram_dispatch.h \
	src/librsocket/options.cc \
	src/librsocket/poll.h \
	src/librsocket/poll.cc \
	src/librsocket/listen_service.h \
	src/librsocket/listen_service.cc \
	src/librsocket/keepalive_service.h \
	src/librsocket/keepalive_service.cc \
	src/librsocket/linger_service.h \
	src/librsocket/linger_service.cc \
	src/librsocket/preload_hooks.h \
	src/librsocket/preload_hooks.cc \
	src/librsocket/preload_settings.cc \
	src/librsocket/preload_ports.h \
	src/librsocket/rsocket_own.h \
	src/librsocket/preload_ports.cc \
	src/librsocket/preload_rules.h \
	src/librsocket/preload_rules.cc \
	src/librsocket/api.cc
librsocket_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
librsocket_la_LIBADD = libslipstream.la $(URCU_LIBS) $(PTHREAD_LIBS)
# -Bsymbolic-functions: librsocket's own calls of its r-functions stay
# its own where upstream's librdmacm comes earlier in a program's lookup
# order (librspreload in a program linked with librdmacm).
librsocket_la_LDFLAGS = -version-info 0:0:0 -Wl,-Bsymbolic-functions \
	-Wl,--version-script=$(top_srcdir)/src/librsocket/librsocket.map $(AM_LDFLAGS)
EXTRA_DIST += src/librsocket/librsocket.map
EXTRA_librsocket_la_DEPENDENCIES = src/librsocket/librsocket.map
rdmaincludedir = $(includedir)/rdma
rdmainclude_HEADERS = include/rdma/rsocket.h
