# tools: command-line helpers installed with the library.
bin_PROGRAMS += tools/slipstream-config
tools_slipstream_config_SOURCES = tools/slipstream-config.cc
# Every face, so each face's settings table registers when it loads: the
# tool calls none of their functions, hence --no-as-needed.
tools_slipstream_config_LDFLAGS = -Wl,--no-as-needed $(AM_LDFLAGS)
tools_slipstream_config_LDADD = librsocket.la libvmacompat.la libslipstream.la
