# libvma.so: the VMA face's preload (LD_PRELOAD=libvma.so, libvma(7)), a
# module installed under libvma's own name beside libvmacompat. It decides,
# records and counts every UDP/TCP socket as libvma would, offloads bound
# UDP sockets (and, with SLIPSTREAM_VMA_TCP=1, TCP connections it opens)
# on the xdp provider's rings (linked whole, when configure found it) and
# answers the Extra API.
lib_LTLIBRARIES += libvma.la
libvma_la_SOURCES = \
	src/vma_preload/banner.h \
	src/vma_preload/banner.cc \
	src/vma_preload/decision.h \
	src/vma_preload/decision.cc \
	src/vma_preload/dup_calls.cc \
	src/vma_preload/extra_api.h \
	src/vma_preload/epoll_face.h \
	src/vma_preload/epoll_face.cc \
	src/vma_preload/epoll_calls.cc \
	src/vma_preload/extra_api.cc \
	src/vma_preload/fork_child.cc \
	src/vma_preload/fork_join.h \
	src/vma_preload/fork_join.cc \
	src/vma_preload/fork_share.h \
	src/vma_preload/fork_share.cc \
	src/vma_preload/inert_settings.h \
	src/vma_preload/inert_settings.cc \
	src/vma_preload/socket_record.h \
	src/vma_preload/socket_record.cc \
	src/vma_preload/socket_fork.cc \
	src/vma_preload/mcast_options.h \
	src/vma_preload/mcast_options.cc \
	src/vma_preload/netdev_rings.h \
	src/vma_preload/netdev_rings.cc \
	src/vma_preload/poll_face.cc \
	src/vma_preload/listen_calls.cc \
	src/vma_preload/sockets.cc \
	src/vma_preload/start.h \
	src/vma_preload/stats_file.h \
	src/vma_preload/stats_file.cc \
	src/vma_preload/start.cc \
	src/vma_preload/data_calls.cc \
	src/vma_preload/socket_flags.h \
	src/vma_preload/udp_multicast.h \
	src/vma_preload/udp_multicast.cc \
	src/vma_preload/udp_offload.h \
	src/vma_preload/udp_offload.cc \
	src/vma_preload/udp_offload_wait.cc \
	src/vma_preload/tcp_info_linux.h \
	src/vma_preload/tcp_offload.h \
	src/vma_preload/tcp_offload.cc \
	src/vma_preload/tcp_park.h \
	src/vma_preload/tcp_park.cc \
	src/vma_preload/tcp_offload_wait.cc \
	src/vma_preload/tcp_options.h \
	src/vma_preload/tcp_options.cc \
	src/vma_preload/tcp_service.h \
	src/vma_preload/tcp_service.cc \
	src/vma_preload/tcp_exit.cc \
	src/vma_preload/port_holds.h \
	src/vma_preload/port_holds.cc \
	src/vma_preload/exec_hook.cc \
	src/vma_preload/tcp_repair.h \
	src/vma_preload/tcp_repair.cc \
	src/vma_preload/tcp_listen.h \
	src/vma_preload/tcp_listen.cc \
	src/vma_preload/ring_turn.h \
	src/vma_preload/wire_addr.h \
	src/vma_preload/mux.h \
	src/vma_preload/rx_extras.h \
	src/vma_preload/zcopy.h \
	src/vma_preload/zcopy.cc \
	src/vma_preload/ring_fds.h \
	src/vma_preload/ring_fds.cc \
	src/vma_preload/socketxtreme.h \
	src/vma_preload/socketxtreme.cc \
	src/vma_preload/xtreme_kernel.h \
	src/vma_preload/xtreme_kernel.cc \
	src/vma_preload/extra_sockopts.h \
	src/vma_preload/extra_sockopts.cc \
	src/vma_preload/signal_calls.cc \
	src/vma_preload/new_fds.cc
# Its names are libc's: no fortify wrappers around the definitions.
libvma_la_CPPFLAGS = $(AM_CPPFLAGS) -U_FORTIFY_SOURCE
libvma_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
libvma_la_LIBADD = libinterpose.la libvmacompat.la libslipstream.la $(PTHREAD_LIBS) -ldl
libvma_la_LDFLAGS = -module -avoid-version -shared $(AM_LDFLAGS)
if HAVE_XDP
libvma_la_CPPFLAGS += $(libslipstream_xdp_la_CPPFLAGS) -DSS_VMA_XDP=1
libvma_la_LIBADD += libslipstream_xdp.la
endif
