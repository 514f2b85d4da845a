# core/net/tcp: the userspace TCP's parts, one concern a file (README.md).
# Wire formats (header, options, sequence arithmetic) and the timer queue
# so far: pure code, unit-tested, not yet used by a face.
libslipstream_core_la_SOURCES += \
	src/core/net/tcp/seq.h \
	src/core/net/tcp/header.h \
	src/core/net/tcp/header.cc \
	src/core/net/tcp/options.h \
	src/core/net/tcp/options.cc \
	src/core/net/tcp/timer_queue.h \
	src/core/net/tcp/timer_queue.cc

core_unit_tests_SOURCES += \
	tests/core/net_tcp_header_test.cc \
	tests/core/net_tcp_options_test.cc \
	tests/core/net_tcp_timer_queue_test.cc

EXTRA_DIST += src/core/net/tcp/README.md
