# librsocket.so: the rsocket API (RDMACM_1.0 symbols) over libslipstream.
lib_LTLIBRARIES += librsocket.la
librsocket_la_SOURCES = \
	librsocket/wire.h \
	librsocket/socket.h \
	librsocket/socket.cc \
	librsocket/close.cc \
	librsocket/engine.cc \
	librsocket/data.cc \
	librsocket/iomap.cc \
	librsocket/options.cc \
	librsocket/poll.h \
	librsocket/poll.cc \
	librsocket/fd_table.h \
	librsocket/fd_table.cc \
	librsocket/listen_service.h \
	librsocket/listen_service.cc \
	librsocket/keepalive_service.h \
	librsocket/keepalive_service.cc \
	librsocket/linger_service.h \
	librsocket/linger_service.cc \
	librsocket/api.cc
librsocket_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
librsocket_la_LIBADD = libslipstream.la $(URCU_LIBS) $(PTHREAD_LIBS)
librsocket_la_LDFLAGS = -version-info 0:0:0 \
	-Wl,--version-script=$(top_srcdir)/librsocket/librsocket.map $(AM_LDFLAGS)
EXTRA_DIST += librsocket/librsocket.map
EXTRA_librsocket_la_DEPENDENCIES = librsocket/librsocket.map
rdmaincludedir = $(includedir)/rdma
rdmainclude_HEADERS = include/rdma/rsocket.h
