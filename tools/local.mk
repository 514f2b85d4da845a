# tools: command-line helpers installed with the library.
bin_PROGRAMS += tools/slipstream-config
tools_slipstream_config_SOURCES = tools/slipstream-config.cc
tools_slipstream_config_LDADD = libslipstream.la
