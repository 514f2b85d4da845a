# libvmacompat: the VMA-compatible face (libvma.conf, VMA_* settings, the
# Extra API, vma_stats), a library of its own over libslipstream. Each part
# adds its sources below; the preload (libvma.so, src/vma_preload) links it
# and is the one user of its exports (SS_API).
lib_LTLIBRARIES += libvmacompat.la
libvmacompat_la_SOURCES =
# The Extra API table with its honest mask (vma_extra(7)); libvma.so hands
# it out through getsockopt(SO_VMA_GET_API).
libvmacompat_la_SOURCES += \
	src/libvmacompat/extra_table.h \
	src/libvmacompat/extra_table.cc
# The packets the Extra API lends and the receive callback (libvma.so's
# recvfrom_zcopy, free_packets, register_recv_callback).
libvmacompat_la_SOURCES += \
	src/libvmacompat/held_packets.h \
	src/libvmacompat/held_packets.cc \
	src/libvmacompat/recv_callback.h \
	src/libvmacompat/recv_callback.cc
# A socket's ring allocation logic (SO_VMA_RING_ALLOC_LOGIC).
libvmacompat_la_SOURCES += \
	src/libvmacompat/ring_logic.h \
	src/libvmacompat/ring_logic.cc
# The buffers socketXtreme lends (vma_buff_t in the frame's headroom).
libvmacompat_la_SOURCES += \
	src/libvmacompat/xtreme_buffs.h \
	src/libvmacompat/xtreme_buffs.cc
# libvma.conf and the VMA_* settings.
libvmacompat_la_SOURCES += \
	src/libvmacompat/conf_file.cc \
	src/libvmacompat/conf_file.h \
	src/libvmacompat/rules.h \
	src/libvmacompat/rules_match.cc \
	src/libvmacompat/rules_parse.cc \
	src/libvmacompat/settings.cc \
	src/libvmacompat/settings.h \
	src/libvmacompat/settings_choices.h \
	src/libvmacompat/settings_spec.cc
# The AF_XDP rings' depth and UMEM from VMA_RX_WRE/VMA_TX_WRE.
libvmacompat_la_SOURCES += \
	src/libvmacompat/ring_depth.h \
	src/libvmacompat/ring_depth.cc
# Never built: makes libtool link the library as C++.
nodist_EXTRA_libvmacompat_la_SOURCES = dummy.cc
libvmacompat_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
libvmacompat_la_LIBADD = libslipstream.la $(PTHREAD_LIBS)
libvmacompat_la_LDFLAGS = -version-info 0:0:0 $(AM_LDFLAGS)
# <mellanox/vma_extra.h>: the Extra API's types and vma_get_api(), as
# libvma installs it (vma_extra(7)); tests/ext/vma_extra_header.sh checks
# the installed copy.
mellanoxincludedir = $(includedir)/mellanox
mellanoxinclude_HEADERS = include/mellanox/vma_extra.h

# vma_stats: the vmastat.<pid> publisher, and the reader vma_stats and the
# unit tests share (stats_proc, stats_reader, stats_format need no core).
libvmacompat_la_SOURCES += \
	src/libvmacompat/stats_layout.h \
	src/libvmacompat/stats_proc.h \
	src/libvmacompat/stats_proc.cc \
	src/libvmacompat/stats_publisher.h \
	src/libvmacompat/stats_publisher.cc \
	src/libvmacompat/stats_process.h \
	src/libvmacompat/stats_process.cc \
	src/libvmacompat/stats_reader.h \
	src/libvmacompat/stats_reader.cc \
	src/libvmacompat/stats_format.h \
	src/libvmacompat/stats_format.cc
