# core/base: settings table, logging.
libslipstream_la_SOURCES += \
	core/base/config.cc \
	core/base/config.h \
	core/base/config_parse.cc \
	core/base/config_parse.h \
	core/base/config_table.cc \
	core/base/errno_guard.h \
	core/base/fifo.h \
	core/base/futex_mutex.h \
	core/base/log.cc \
	core/base/log.h

core_unit_tests_SOURCES += \
	tests/core/base_config_test.cc \
	tests/core/base_log_test.cc
