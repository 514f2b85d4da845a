# librspreload.so: unmodified TCP programs on rsockets (LD_PRELOAD), a
# module under ${libdir}/rsocket as upstream installs it, with upstream's
# compat names as links (install hook below).
rspreloadexecdir = $(libdir)/rsocket
rspreloadexec_LTLIBRARIES = librspreload.la
librspreload_la_SOURCES = \
	src/preload/route.h \
	src/preload/stats.h \
	src/preload/stats.cc \
	src/preload/dup_calls.h \
	src/preload/dup_calls.cc \
	src/preload/socket_setup.h \
	src/preload/listen_calls.cc \
	src/preload/sockets.cc \
	src/preload/data_calls.cc \
	src/preload/sigpipe.h \
	src/preload/splice.cc \
	src/preload/options.cc \
	src/preload/connection_options.h \
	src/preload/connection_options.cc \
	src/preload/poll_face.cc \
	src/preload/listener_ready.cc \
	src/preload/epoll_face.h \
	src/preload/epoll_face.cc \
	src/preload/epoll_calls.cc \
	src/preload/late_fallback.h \
	src/preload/late_fallback.cc \
	src/preload/signal_calls.cc \
	src/preload/stdio.cc \
	src/preload/exec_hook.cc \
	src/preload/carried_record.h \
	src/preload/carried_record.cc \
	src/preload/pass_rights.h \
	src/preload/pass_rights.cc
# Its names are libc's: no fortify wrappers around the definitions.
librspreload_la_CPPFLAGS = $(AM_CPPFLAGS) -U_FORTIFY_SOURCE
librspreload_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
librspreload_la_LIBADD = libinterpose.la librsocket.la libslipstream.la $(URCU_LIBS) $(PTHREAD_LIBS) -ldl
librspreload_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(top_srcdir)/src/preload/librspreload.map $(AM_LDFLAGS)
EXTRA_DIST += src/preload/librspreload.map
EXTRA_librspreload_la_DEPENDENCIES = src/preload/librspreload.map

install-exec-hook: install-rspreload-links
install-rspreload-links:
	cd $(DESTDIR)$(rspreloadexecdir) && \
	  ln -sf librspreload.so librspreload.so.1 && \
	  ln -sf librspreload.so librspreload.so.1.0.0
uninstall-hook: uninstall-rspreload-links
uninstall-rspreload-links:
	rm -f $(DESTDIR)$(rspreloadexecdir)/librspreload.so.1 $(DESTDIR)$(rspreloadexecdir)/librspreload.so.1.0.0
.PHONY: install-rspreload-links uninstall-rspreload-links
