# src/core/base: the settings layer and core's table, logging, service
# threads, files appended to, the fd table, descriptor passing (SCM_RIGHTS), counts of
# processes sharing an object after fork, and the readiness/wait module
# (interruptible_poll, Pollable, Kick, poll_mixed, EpollSet).
libslipstream_core_la_SOURCES += \
	src/core/base/api.h \
	src/core/base/append_file.cc \
	src/core/base/append_file.h \
	src/core/base/config.cc \
	src/core/base/config.h \
	src/core/base/config_parse.cc \
	src/core/base/config_parse.h \
	src/core/base/config_core.cc \
	src/core/base/config_core.h \
	src/core/base/epoll_set.cc \
	src/core/base/epoll_set.h \
	src/core/base/errno_guard.h \
	src/core/base/call_mask.cc \
	src/core/base/call_mask.h \
	src/core/base/cancel.h \
	src/core/base/cancel.cc \
	src/core/base/exception_errno.h \
	src/core/base/fd_passing.cc \
	src/core/base/fd_passing.h \
	src/core/base/fd_spare.cc \
	src/core/base/fd_spare.h \
	src/core/base/fd_table.cc \
	src/core/base/fd_table.h \
	src/core/base/fifo.h \
	src/core/base/futex_mutex.h \
	src/core/base/interruptible_poll.cc \
	src/core/base/interruptible_poll.h \
	src/core/base/own_fd.h \
	src/core/base/proc_stat.h \
	src/core/base/proc_stat.cc \
	src/core/base/proc_sys.h \
	src/core/base/proc_sys.cc \
	src/core/base/sandbox.cc \
	src/core/base/sandbox.h \
	src/core/base/kick.cc \
	src/core/base/kick.h \
	src/core/base/log.cc \
	src/core/base/log.h \
	src/core/base/msghdr_of.h \
	src/core/base/mixed_poll.cc \
	src/core/base/mixed_poll.h \
	src/core/base/pollable.h \
	src/core/base/pod_bytes.h \
	src/core/base/process_share.cc \
	src/core/base/process_share.h \
	src/core/base/rule_lines.h \
	src/core/base/sanitizer.h \
	src/core/base/scoped_count.h \
	src/core/base/service_thread.cc \
	src/core/base/library_thread.h \
	src/core/base/library_thread.cc \
	src/core/base/service_thread.h \
	src/core/base/signal_depth.cc \
	src/core/base/signal_depth.h \
	src/core/base/signals_held.h \
	src/core/base/sleep_set.cc \
	src/core/base/sleep_set.h \
	src/core/base/spin_phase.h \
	src/core/base/spin_phase.cc \
	src/core/base/deadline.h

core_unit_tests_SOURCES += \
	tests/core/base_config_test.cc \
	tests/core/base_epoll_set_test.cc \
	tests/core/base_fd_passing_test.cc \
	tests/core/base_fd_spare_test.cc \
	tests/core/base_proc_stat_test.cc \
	tests/core/base_process_share_test.cc \
	tests/core/base_quiet_sleep_test.cc \
	tests/core/base_sandbox_test.cc \
	tests/core/base_exception_errno_test.cc \
	tests/core/base_fd_table_test.cc \
	tests/core/base_interruptible_poll_test.cc \
	tests/core/base_log_test.cc \
	tests/core/base_mixed_poll_test.cc \
	tests/core/base_rule_lines_test.cc \
	tests/core/base_service_thread_test.cc \
	tests/core/base_spin_limit_test.cc \
	tests/core/wait_helpers.h
