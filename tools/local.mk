# tools: command-line helpers installed with the library.
bin_PROGRAMS += tools/slipstream-config
tools_slipstream_config_SOURCES = tools/slipstream-config.cc
# Every face, so each face's settings table registers when it loads: the
# tool calls none of their functions, hence --no-as-needed.
tools_slipstream_config_LDFLAGS = -Wl,--no-as-needed $(AM_LDFLAGS)
tools_slipstream_config_LDADD = librsocket.la libvmacompat.la libslipstream.la
# vma_stats: reads the VMA face's vmastat.<pid> files. It compiles the
# reader's files itself (they need nothing of core), so it runs without
# any Slipstream library, on a file of any process.
bin_PROGRAMS += tools/vma_stats
tools_vma_stats_SOURCES = tools/vma_stats.cc \
	src/libvmacompat/stats_proc.cc \
	src/libvmacompat/stats_reader.cc \
	src/libvmacompat/stats_format.cc
